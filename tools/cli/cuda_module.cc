#include "tools/cli/cuda_module.h"

#include <dlfcn.h>

#include <filesystem>
#include <system_error>

namespace podsim::cli {

const calibration::gpu::CudaModule* cuda_module(std::string& why_not) {
#if !PODSIM_HAVE_CUDA
  why_not =
      "this podsim was built without CUDA support (nvcc was not found, or PODSIM_ENABLE_CUDA was "
      "OFF, when it was configured)";
  return nullptr;
#else
  namespace gpu = calibration::gpu;
  static const gpu::CudaModule* loaded = nullptr;
  static std::string failure;
  static bool tried = false;
  if (!tried) {
    tried = true;
    std::error_code ec;
    const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    const std::filesystem::path file =
        (ec ? std::filesystem::path(".") : exe.parent_path()) / gpu::kCudaModuleFile;
    // Never closed: the CUDA runtime stays loaded until the process exits.
    void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* error = dlerror();
      failure = "cannot load " + file.string() + ": " + (error != nullptr ? error : "unknown");
    } else if (auto entry = reinterpret_cast<const gpu::CudaModule* (*)()>(
                   dlsym(handle, gpu::kCudaModuleEntry));
               entry == nullptr) {
      failure = file.string() + " has no " + gpu::kCudaModuleEntry;
    } else if (const gpu::CudaModule* module = entry(); module->abi != gpu::kCudaModuleAbi) {
      failure = file.string() + " is from another podsim build (module ABI " +
                std::to_string(module->abi) + ", this podsim " +
                std::to_string(gpu::kCudaModuleAbi) + "); rebuild both";
    } else {
      loaded = module;
    }
  }
  if (loaded == nullptr) why_not = failure;
  return loaded;
#endif
}

}  // namespace podsim::cli
