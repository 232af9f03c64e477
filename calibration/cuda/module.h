#pragma once

#include <string>

#include "calibration/cuda/execute_runner.h"
#include "calibration/cuda/runner.h"

// The CUDA side of podsim as one shared module, libpodsim_cuda.so, built
// next to the podsim binary when nvcc is found. Only `podsim calibrate` and
// `podsim execute` load it (tools/cli/cuda_module.h, dlopen on first use), so
// every other command starts without mapping the CUDA runtime, cuBLASLt and
// NCCL. Plain C++: the CLI includes this without CUDA headers.
namespace podsim::calibration::gpu {

/// The module's entry points; podsim_cuda_module() returns them.
struct CudaModule {
  /// kCudaModuleAbi of the build that made the module: a module from
  /// another build is refused instead of being called with other types.
  int abi = 0;
  std::string (*device_unavailable_reason)() = nullptr;
  RawMeasurements (*run_calibration)(const RunOptions& options) = nullptr;
  ExecMeasurement (*run_execute)(const ExecPlan& plan, const ExecPlan& check_plan,
                                 const ExecuteRunOptions& options) = nullptr;
};

/// Bumped whenever CudaModule or a type it passes changes.
inline constexpr int kCudaModuleAbi = 1;
inline constexpr const char* kCudaModuleFile = "libpodsim_cuda.so";
inline constexpr const char* kCudaModuleEntry = "podsim_cuda_module";

}  // namespace podsim::calibration::gpu

/// The module's one exported symbol.
extern "C" const podsim::calibration::gpu::CudaModule* podsim_cuda_module();
