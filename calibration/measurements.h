#pragma once

#include <map>
#include <string>
#include <vector>

namespace podsim::calibration {

/// Where a set of measurements came from: the machine, the software and the run.
/// Numbers the runtime could not provide stay 0 / empty.
struct Provenance {
  std::string gpu_name;  ///< cudaDeviceProp::name ("NVIDIA H200")
  int compute_capability_major = 0;
  int compute_capability_minor = 0;
  int sm_count = 0;
  int device_count = 0;  ///< CUDA devices visible to the run
  double hbm_bytes = 0;  ///< cudaDeviceProp::totalGlobalMem
  double l2_bytes = 0;   ///< cudaDeviceProp::l2CacheSize
  int memory_bus_width_bits = 0;
  double sm_clock_hz_reported = 0;   ///< cudaDevAttrClockRate (max boost)
  double mem_clock_hz_reported = 0;  ///< cudaDevAttrMemoryClockRate
  double sm_clock_hz_measured = 0;   ///< clock64() cycles over CUDA-event time, under load
  std::string driver_version;        ///< cudaDriverGetVersion, "13.0"
  std::string runtime_version;       ///< cudaRuntimeGetVersion
  std::string cublas_version;
  std::string nccl_version;  ///< empty when NCCL was not built in
  std::string date_utc;      ///< ISO 8601, "2025-01-31T12:00:00Z"
  std::string command_line;
  std::string podsim_version;
  bool quick = false;  ///< the reduced sweep (--quick)
};

/// One measured point of a series: the parameters that define it, every timed
/// repeat, the work one repeat does, and whether its result was checked right.
struct Point {
  /// Defining parameters, e.g. {"bytes": 1048576} or {"m": 4096, "n": 4096, "k": 4096}.
  std::map<std::string, double> params;
  /// Every timed repeat, seconds (CUDA-event time, after warm-up).
  std::vector<double> times_s;
  /// Work done by one repeat, in the series' work_unit (bytes, FLOPs, launches).
  double work = 0;
  /// The result of the measured operation matched its reference.
  bool check_passed = true;

  /// Median of times_s (mean of the two middle values for an even count); 0 if empty.
  double median_s() const;
  /// work / median_s(); 0 when there is no time.
  double rate_per_s() const;
};

/// A named sweep of one benchmark, e.g. "hbm.triad" over sizes.
struct Series {
  std::string name;
  /// What Point::work counts: "bytes", "flops" or "launches".
  std::string work_unit;
  std::string description;
  /// Free-form facts that hold for all points (dtype, kernel used, layout).
  std::map<std::string, std::string> attributes;
  std::vector<Point> points;
};

/// Everything one calibration run measured, before any fitting.
struct RawMeasurements {
  Provenance provenance;
  std::vector<Series> series;
  /// Single measured numbers (e.g. "fp32.flops_per_s", "tensor.bf16_mma_sync.flops_per_s").
  std::map<std::string, double> scalars;
  /// Benchmarks that failed, as "section: reason".
  std::vector<std::string> errors;
  /// Benchmarks this machine cannot run (one GPU, no wgmma, ...), as "section: reason".
  std::vector<std::string> skipped;

  /// The series of that name, or nullptr.
  const Series* find(const std::string& name) const;
};

}  // namespace podsim::calibration
