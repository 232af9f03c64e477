#pragma once

#include <string>

#include "calibration/cuda/module.h"

namespace podsim::cli {

/// The CUDA module (calibration/cuda/module.h) next to this podsim binary,
/// loaded on the first call; nullptr when it cannot be loaded, with the
/// reason in `why_not` ("built without CUDA support", or the loader's
/// message when the CUDA libraries are missing).
const calibration::gpu::CudaModule* cuda_module(std::string& why_not);

}  // namespace podsim::cli
