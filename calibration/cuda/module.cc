#include "calibration/cuda/module.h"

extern "C" __attribute__((visibility("default"))) const podsim::calibration::gpu::CudaModule*
podsim_cuda_module() {
  namespace gpu = podsim::calibration::gpu;
  static const gpu::CudaModule module{gpu::kCudaModuleAbi, &gpu::device_unavailable_reason,
                                      &gpu::run_calibration, &gpu::run_execute};
  return &module;
}
