#pragma once

// The executor's correctness checks.

#include <vector>

#include "calibration/cuda/execute_layer.cuh"
#include "calibration/execute_report.h"

namespace podsim::calibration::gpu {

/// Runs one pass of `check_plan` (small shapes, the same op structure as the
/// timed plan) with emulated collectives and compares the stack's output,
/// its input gradient, every weight gradient and the AdamW step with the
/// double-precision host reference (calibration/execute_reference.h).
std::vector<CheckOutcome> check_against_reference(const ExecPlan& check_plan, cudaStream_t stream,
                                                  cublasLtHandle_t lt);

/// Runs one pass of `ex`'s plan op by op, collectives skipped, checking the
/// first instance of every GEMM step at sampled outputs against host dot
/// products of the operands it read, attention's forward and backward at
/// sampled rows against the host, and that the pass's results are finite.
/// `step` is the optimizer step number.
std::vector<CheckOutcome> run_spot_checked_pass(LayerExecutor& ex, cudaStream_t stream,
                                                int64_t step);

}  // namespace podsim::calibration::gpu
