#pragma once

// Error checking for every CUDA, cuBLAS and NCCL call: a failure becomes a
// thrown CudaError whose message names the call, file:line and the API's own
// error string. Host-only header (no device code).

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace podsim::calibration::gpu {

class CudaError : public std::runtime_error {
 public:
  CudaError(const std::string& what, bool sticky) : std::runtime_error(what), sticky_(sticky) {}
  /// The error corrupted the CUDA context (illegal address, launch failure...):
  /// nothing more can run in this process.
  bool sticky() const { return sticky_; }

 private:
  bool sticky_;
};

/// Errors after which the context is unusable (CUDA runtime API docs: "sticky" errors).
inline bool is_sticky(cudaError_t e) {
  switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
    case cudaErrorAssert:
      return true;
    default:
      return false;
  }
}

[[noreturn]] inline void throw_cuda(cudaError_t e, const char* call, const char* file, int line) {
  throw CudaError(std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " +
                      cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")",
                  is_sticky(e));
}

inline const char* cublas_status_name(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS:
      return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR:
      return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR:
      return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR:
      return "CUBLAS_STATUS_LICENSE_ERROR";
    default:
      return "unknown cuBLAS status";
  }
}

[[noreturn]] inline void throw_cublas(cublasStatus_t s, const char* call, const char* file,
                                      int line) {
  throw CudaError(std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " +
                      cublas_status_name(s) + " (" + std::to_string(static_cast<int>(s)) + ")",
                  /*sticky=*/false);
}

}  // namespace podsim::calibration::gpu

#define PODSIM_CUDA_CHECK(call)                                                       \
  do {                                                                                \
    const cudaError_t podsim_err_ = (call);                                           \
    if (podsim_err_ != cudaSuccess)                                                   \
      ::podsim::calibration::gpu::throw_cuda(podsim_err_, #call, __FILE__, __LINE__); \
  } while (0)

// After a kernel launch: the launch error now, the execution error at the next sync.
#define PODSIM_CUDA_CHECK_LAUNCH() PODSIM_CUDA_CHECK(cudaGetLastError())

#define PODSIM_CUBLAS_CHECK(call)                                                      \
  do {                                                                                 \
    const cublasStatus_t podsim_st_ = (call);                                          \
    if (podsim_st_ != CUBLAS_STATUS_SUCCESS)                                           \
      ::podsim::calibration::gpu::throw_cublas(podsim_st_, #call, __FILE__, __LINE__); \
  } while (0)
