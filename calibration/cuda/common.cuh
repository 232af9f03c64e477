#pragma once

// Shared pieces of the microbenchmarks: RAII wrappers for device memory,
// pinned memory, streams and events; a counter-based random generator that
// host and device evaluate identically (so a result can be checked on the host
// without copying the inputs back); event timing; the run context.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "calibration/cuda/check.h"
#include "calibration/cuda/runner.h"
#include "calibration/measurements.h"

namespace podsim::calibration::gpu {

// ------------------------------------------------------------------ random

/// splitmix64 of (seed, index): a stateless hash, the same on host and device.
__host__ __device__ inline uint64_t mix64(uint64_t seed, uint64_t index) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + index + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// Uniform in [lo, hi): 24 random bits, exactly representable in float.
__host__ __device__ inline float uniform(uint64_t seed, uint64_t index, float lo, float hi) {
  const float u = static_cast<float>(mix64(seed, index) >> 40) * (1.0f / 16777216.0f);
  return lo + (hi - lo) * u;
}

template <class T>
__host__ __device__ inline T from_float(float v);
template <>
__host__ __device__ inline float from_float<float>(float v) {
  return v;
}
template <>
__host__ __device__ inline __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}
template <>
__host__ __device__ inline __half from_float<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__host__ __device__ inline __nv_fp8_e4m3 from_float<__nv_fp8_e4m3>(float v) {
  return __nv_fp8_e4m3(v);
}

__host__ __device__ inline float to_float(float v) { return v; }
__host__ __device__ inline float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__host__ __device__ inline float to_float(__half v) { return __half2float(v); }
__host__ __device__ inline float to_float(__nv_fp8_e4m3 v) { return static_cast<float>(v); }

/// The value fill_random() stores at `index` (after rounding to T), as float.
template <class T>
__host__ __device__ inline float random_value(uint64_t seed, uint64_t index, float lo, float hi) {
  return to_float(from_float<T>(uniform(seed, index, lo, hi)));
}

/// Fills n elements with uniform(seed, i, lo, hi) rounded to T.
template <class T>
void fill_random(T* ptr, size_t n, uint64_t seed, float lo, float hi, cudaStream_t stream);

// ------------------------------------------------------------------ RAII

template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t count) : count_(count) {
    if (count > 0)
      PODSIM_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&ptr_), count * sizeof(T)));
  }
  ~DeviceBuffer() {
    if (ptr_ != nullptr)
      cudaFree(ptr_);  // no throw from a destructor; errors show at the next call
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept
      : ptr_(std::exchange(o.ptr_, nullptr)), count_(std::exchange(o.count_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(count_, o.count_);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* get() const { return ptr_; }
  size_t size() const { return count_; }
  size_t bytes() const { return count_ * sizeof(T); }

  /// Copies element i back to the host (synchronous).
  T read(size_t i) const {
    T v;
    PODSIM_CUDA_CHECK(cudaMemcpy(&v, ptr_ + i, sizeof(T), cudaMemcpyDeviceToHost));
    return v;
  }
  std::vector<T> read_all() const {
    std::vector<T> v(count_);
    if (count_ > 0) PODSIM_CUDA_CHECK(cudaMemcpy(v.data(), ptr_, bytes(), cudaMemcpyDeviceToHost));
    return v;
  }

 private:
  T* ptr_ = nullptr;
  size_t count_ = 0;
};

class PinnedBuffer {
 public:
  explicit PinnedBuffer(size_t bytes) : bytes_(bytes) {
    PODSIM_CUDA_CHECK(cudaMallocHost(&ptr_, bytes));
  }
  ~PinnedBuffer() {
    if (ptr_ != nullptr) cudaFreeHost(ptr_);
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  unsigned char* get() const { return static_cast<unsigned char*>(ptr_); }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

class Stream {
 public:
  Stream() { PODSIM_CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~Stream() {
    if (s_ != nullptr) cudaStreamDestroy(s_);
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

class Event {
 public:
  Event() { PODSIM_CUDA_CHECK(cudaEventCreate(&e_)); }
  ~Event() {
    if (e_ != nullptr) cudaEventDestroy(e_);
  }
  Event(Event&& o) noexcept : e_(std::exchange(o.e_, nullptr)) {}
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return e_; }

 private:
  cudaEvent_t e_ = nullptr;
};

// ------------------------------------------------------------------ timing

/// Runs `enqueue(i)` (which puts one operation on `stream`) `warmup` times
/// untimed, then `repeats` times, each between two CUDA events, all queued
/// back to back; returns the seconds of each timed repeat. `i` counts all
/// calls from 0, so a caller can rotate buffers with it.
template <class F>
std::vector<double> time_repeats(cudaStream_t stream, int warmup, int repeats, F&& enqueue) {
  int call = 0;
  for (int w = 0; w < warmup; ++w) enqueue(call++);
  std::vector<Event> start, stop;
  start.reserve(static_cast<size_t>(repeats));
  stop.reserve(static_cast<size_t>(repeats));
  for (int r = 0; r < repeats; ++r) {
    start.emplace_back();
    stop.emplace_back();
  }
  for (int r = 0; r < repeats; ++r) {
    PODSIM_CUDA_CHECK(cudaEventRecord(start[static_cast<size_t>(r)].get(), stream));
    enqueue(call++);
    PODSIM_CUDA_CHECK(cudaEventRecord(stop[static_cast<size_t>(r)].get(), stream));
  }
  PODSIM_CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<double> out;
  for (int r = 0; r < repeats; ++r) {
    float ms = 0;
    PODSIM_CUDA_CHECK(cudaEventElapsedTime(&ms, start[static_cast<size_t>(r)].get(),
                                           stop[static_cast<size_t>(r)].get()));
    out.push_back(static_cast<double>(ms) * 1e-3);
  }
  return out;
}

/// Median (mean of the middle two for an even count); 0 if empty.
inline double median_of(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// Divides every time by n (a repeat that ran n operations).
inline std::vector<double> per_operation(std::vector<double> times, int n) {
  for (double& t : times) t /= n;
  return times;
}

// ------------------------------------------------------------------ device

/// Makes `device` current, fills `prop` with its properties and returns how
/// many devices are visible. Throws NoDeviceError when there is no usable
/// device or no device of that number.
int select_device(int device, cudaDeviceProp& prop);

// ------------------------------------------------------------------ sections

/// Runs `body` (one section of a run) on `device`; a failure becomes a line
/// "name: what" in `errors` and the run can go on. Returns true when the CUDA
/// context is lost (a sticky error): nothing more can run in this process.
template <class F>
bool run_section(const std::string& name, int device, std::vector<std::string>& errors, F&& body) {
  bool lost = false;
  try {
    body();
    PODSIM_CUDA_CHECK(cudaSetDevice(device));
    PODSIM_CUDA_CHECK(cudaDeviceSynchronize());
  } catch (const CudaError& e) {
    errors.push_back(name + ": " + e.what());
    lost = e.sticky();
  } catch (const std::exception& e) {
    errors.push_back(name + ": " + e.what());
  }
  if (!lost) {
    // A non-sticky error stays queried until read; a sticky one shows here too.
    const cudaError_t pending = cudaDeviceSynchronize();
    cudaGetLastError();
    lost = is_sticky(pending);
    if (pending != cudaSuccess && !lost) {
      errors.push_back(name + ": pending CUDA error " + cudaGetErrorName(pending));
    }
  }
  return lost;
}

// ------------------------------------------------------------------ context

/// What every benchmark section gets: the options, the device, the result sink.
struct Context {
  const RunOptions& options;
  RawMeasurements& raw;
  cudaDeviceProp prop{};
  int device = 0;
  cudaStream_t stream = nullptr;

  void progress(const std::string& line) const {
    if (options.progress) options.progress(line);
  }
  int warmup() const { return options.quick ? 2 : 3; }
  int repeats() const { return options.quick ? 5 : 9; }
  int cc() const { return prop.major * 10 + prop.minor; }
  double l2_bytes() const { return static_cast<double>(prop.l2CacheSize); }
};

/// An empty bandwidth-by-size series (fit alpha_beta) whose kernels are timed
/// back to back over rotating buffer sets.
inline Series rotating_bandwidth_series(const std::string& name, const std::string& description) {
  Series s;
  s.name = name;
  s.work_unit = "bytes";
  s.description = description;
  s.attributes = {
      {"fit", "alpha_beta"},
      {"timing", "per kernel, launched back to back over rotating buffers (footprint >= 4x L2)"}};
  return s;
}

/// Human-readable bytes ("64 MiB") for progress lines.
std::string format_bytes(double bytes);

// Benchmark sections (one per file). Each appends Series / scalars to ctx.raw
// and throws CudaError (or std::runtime_error) when it cannot go on.
void measure_clock_and_fp32(Context& ctx);
void measure_tensor_peaks(Context& ctx);
void measure_hbm(Context& ctx);
void measure_l2(Context& ctx);
void measure_layers(Context& ctx);
void measure_gemm(Context& ctx);
void measure_attention(Context& ctx);
void measure_launch(Context& ctx);
void measure_host_copies(Context& ctx);
void measure_multi_gpu(Context& ctx);

}  // namespace podsim::calibration::gpu
