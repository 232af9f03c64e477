#pragma once

#include <functional>
#include <stdexcept>
#include <string>

#include "calibration/measurements.h"

// The host-facing entry points of the CUDA microbenchmarks. Plain C++: the
// CLI includes this without CUDA headers. Built only when nvcc is found, into
// the module the CLI loads (target podsim_cuda, module.h).
namespace podsim::calibration::gpu {

struct RunOptions {
  /// Reduced sweeps (about a third of the full run's time).
  bool quick = false;
  /// The CUDA device to measure (0 = the first).
  int device = 0;
  /// Recorded in the provenance.
  std::string command_line;
  std::string podsim_version;
  /// One line per step, for a progress display ("hbm: triad 64 MiB"). May be empty.
  std::function<void(const std::string&)> progress;
  /// Called after every section with everything measured so far, so that a
  /// run cut short still leaves a profile behind. May be empty.
  std::function<void(const RawMeasurements&)> checkpoint;
};

/// No usable CUDA device (the message is the reason, e.g. the error string of
/// cudaGetDeviceCount).
class NoDeviceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Versions of the CUDA driver and runtime, cuBLASLt and NCCL ("" when not built in).
struct SoftwareVersions {
  std::string driver, runtime, cublas, nccl;
};
SoftwareVersions software_versions();

/// An empty string when a CUDA device can be used, else why not (the
/// runtime's error string for cudaGetDeviceCount, or "no devices found").
std::string device_unavailable_reason();

/// Runs every microbenchmark on `options.device` (and the peer/NCCL ones
/// across all visible devices when there are two or more). A benchmark that
/// fails is recorded in RawMeasurements::errors and the run goes on, unless the
/// CUDA context is lost, in which case the run stops there and returns what it
/// has (with the error). Throws NoDeviceError when there is no device.
RawMeasurements run_calibration(const RunOptions& options);

}  // namespace podsim::calibration::gpu
