#include <cstdio>

#include "calibration/cuda/common.cuh"

namespace podsim::calibration::gpu {
namespace {

template <class T>
__global__ void fill_random_kernel(T* ptr, size_t n, uint64_t seed, float lo, float hi) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    ptr[i] = from_float<T>(uniform(seed, i, lo, hi));
  }
}

}  // namespace

template <class T>
void fill_random(T* ptr, size_t n, uint64_t seed, float lo, float hi, cudaStream_t stream) {
  if (n == 0) return;
  const size_t blocks = (n + 255) / 256;
  const unsigned grid = static_cast<unsigned>(blocks < 65536 ? blocks : 65536);
  fill_random_kernel<T><<<grid, 256, 0, stream>>>(ptr, n, seed, lo, hi);
  PODSIM_CUDA_CHECK_LAUNCH();
}

template void fill_random<float>(float*, size_t, uint64_t, float, float, cudaStream_t);
template void fill_random<__nv_bfloat16>(__nv_bfloat16*, size_t, uint64_t, float, float,
                                         cudaStream_t);
template void fill_random<__half>(__half*, size_t, uint64_t, float, float, cudaStream_t);
template void fill_random<__nv_fp8_e4m3>(__nv_fp8_e4m3*, size_t, uint64_t, float, float,
                                         cudaStream_t);

int select_device(int device, cudaDeviceProp& prop) {
  const std::string reason = device_unavailable_reason();
  if (!reason.empty()) throw NoDeviceError(reason);
  int count = 0;
  PODSIM_CUDA_CHECK(cudaGetDeviceCount(&count));
  if (device < 0 || device >= count) {
    throw NoDeviceError("device " + std::to_string(device) + " does not exist (" +
                        std::to_string(count) + " visible)");
  }
  PODSIM_CUDA_CHECK(cudaSetDevice(device));
  PODSIM_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  return count;
}

std::string format_bytes(double bytes) {
  char buf[64];
  if (bytes >= 1024.0 * 1024 * 1024) {
    std::snprintf(buf, sizeof buf, "%.3g GiB", bytes / (1024.0 * 1024 * 1024));
  } else if (bytes >= 1024.0 * 1024) {
    std::snprintf(buf, sizeof buf, "%.3g MiB", bytes / (1024.0 * 1024));
  } else if (bytes >= 1024.0) {
    std::snprintf(buf, sizeof buf, "%.3g KiB", bytes / 1024.0);
  } else {
    std::snprintf(buf, sizeof buf, "%.0f B", bytes);
  }
  return buf;
}

}  // namespace podsim::calibration::gpu
