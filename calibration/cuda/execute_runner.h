#pragma once

#include <functional>
#include <string>

#include "calibration/cuda/runner.h"
#include "calibration/execute_ops.h"
#include "calibration/execute_report.h"

// The host-facing entry point of the executor (`podsim execute`). Plain C++:
// the CLI includes it without CUDA headers. Built only with nvcc, into the
// module the CLI loads (target podsim_cuda, module.h).
namespace podsim::calibration::gpu {

struct ExecuteRunOptions {
  int device = 0;
  /// Untimed passes before the timed ones (cuBLASLt and module loading,
  /// clocks, caches).
  int warmup_passes = 2;
  /// Timed passes; every op instance of each is timed.
  int timed_passes = 5;
  /// Run the correctness checks only (small shapes), no timing.
  bool check_only = false;
  /// One line per step for a progress display. May be empty.
  std::function<void(const std::string&)> progress;
};

/// Runs `plan` on the GPU: first the correctness check, `check_plan` (the
/// same op structure at small shapes) against the double-precision host
/// reference; then the plan itself: one pass op by op with sampled checks of
/// every GEMM and of attention, then warm-up and timed passes with CUDA
/// events around every op instance; then, with enough GPUs and NCCL, the
/// layer's collectives alone. Problems that stop a part (a failed check, a
/// plan that does not fit in memory, a CUDA error) are in the result's
/// checks and errors; the run goes on where it can. Throws NoDeviceError
/// when there is no usable device.
ExecMeasurement run_execute(const ExecPlan& plan, const ExecPlan& check_plan,
                            const ExecuteRunOptions& options);

}  // namespace podsim::calibration::gpu
