// Memory-bound transformer layers (bf16): RMSNorm and softmax over 4096-wide
// rows, SwiGLU and the residual add elementwise; achieved bandwidth by size.
// RMSNorm and the residual add are the executor's own kernels
// (execute_kernels.cu), so a profile describes what `podsim execute` runs.

#include <algorithm>
#include <cmath>

#include "calibration/cuda/common.cuh"
#include "calibration/cuda/execute_kernels.cuh"
#include "sim/ceil_div.h"

namespace podsim::calibration::gpu {
namespace {

using bf16 = __nv_bfloat16;
constexpr int kWidth = 4096;  // row width of the norm and softmax (Llama 3 8B hidden size)
constexpr int kThreads = 128;
constexpr int kVecPerThread = kWidth / 8 / kThreads;  // uint4 (8 bf16) loads per thread per row

enum class Layer : int { kRmsNorm = 0, kSoftmax = 1, kSwiglu = 2, kResidual = 3 };

__device__ float block_reduce(float v, bool is_max) {
  __shared__ float partial[kThreads / 32];
#pragma unroll
  for (int off = 16; off > 0; off /= 2) {
    const float o = __shfl_xor_sync(0xffffffffu, v, off);
    v = is_max ? fmaxf(v, o) : v + o;
  }
  __syncthreads();  // `partial` may still be read from a previous call
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
  __syncthreads();
  float r = partial[0];
#pragma unroll
  for (int i = 1; i < kThreads / 32; ++i) r = is_max ? fmaxf(r, partial[i]) : r + partial[i];
  return r;
}

__global__ void __launch_bounds__(kThreads)
    softmax_kernel(const bf16* __restrict__ x, bf16* __restrict__ out) {
  const size_t row = blockIdx.x;
  const uint4* xr = reinterpret_cast<const uint4*>(x + row * kWidth);
  float f[kVecPerThread][8];
  float mx = -INFINITY;
#pragma unroll
  for (int i = 0; i < kVecPerThread; ++i) {
    const uint4 v = xr[threadIdx.x + i * kThreads];
    const bf16* e = reinterpret_cast<const bf16*>(&v);
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      f[i][j] = __bfloat162float(e[j]);
      mx = fmaxf(mx, f[i][j]);
    }
  }
  mx = block_reduce(mx, true);
  float sum = 0;
#pragma unroll
  for (int i = 0; i < kVecPerThread; ++i) {
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      f[i][j] = __expf(f[i][j] - mx);
      sum += f[i][j];
    }
  }
  const float inv = 1.0f / block_reduce(sum, false);
  uint4* orow = reinterpret_cast<uint4*>(out + row * kWidth);
#pragma unroll
  for (int i = 0; i < kVecPerThread; ++i) {
    uint4 o;
    bf16* oe = reinterpret_cast<bf16*>(&o);
#pragma unroll
    for (int j = 0; j < 8; ++j) oe[j] = __float2bfloat16_rn(f[i][j] * inv);
    orow[threadIdx.x + i * kThreads] = o;
  }
}

// SwiGLU on separate gate and up arrays: out = silu(a) * b. n8 = elements / 8.
// (The executor's SwiGLU reads gate | up halves of one row: execute_kernels.cu.)
__global__ void swiglu_kernel(const bf16* __restrict__ a, const bf16* __restrict__ b,
                              bf16* __restrict__ out, size_t n8) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n8; i += stride) {
    const uint4 av = reinterpret_cast<const uint4*>(a)[i];
    const uint4 bv = reinterpret_cast<const uint4*>(b)[i];
    const bf16* ae = reinterpret_cast<const bf16*>(&av);
    const bf16* be = reinterpret_cast<const bf16*>(&bv);
    uint4 o;
    bf16* oe = reinterpret_cast<bf16*>(&o);
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const float x = __bfloat162float(ae[j]);
      oe[j] = __float2bfloat16_rn(x / (1.0f + __expf(-x)) * __bfloat162float(be[j]));
    }
    reinterpret_cast<uint4*>(out)[i] = o;
  }
}

constexpr uint64_t kSeedA = 801, kSeedB = 802, kSeedW = 803;

double host_in(uint64_t seed, size_t i) {
  return static_cast<double>(random_value<bf16>(seed, i, -2.0f, 2.0f));
}

// Checks row `row` (norm, softmax) or elements around `row * kWidth` (elementwise) of one set.
bool check_sample(Layer layer, const DeviceBuffer<bf16>& out, size_t base, size_t row) {
  const size_t first = base + row * kWidth;
  std::vector<bf16> got(kWidth);
  PODSIM_CUDA_CHECK(
      cudaMemcpy(got.data(), out.get() + first, kWidth * sizeof(bf16), cudaMemcpyDeviceToHost));
  std::vector<double> x(kWidth);
  for (int j = 0; j < kWidth; ++j)
    x[static_cast<size_t>(j)] = host_in(kSeedA, first + static_cast<size_t>(j));
  std::vector<double> want(kWidth);
  if (layer == Layer::kRmsNorm) {
    double ss = 0;
    for (double v : x) ss += v * v;
    const double r = 1.0 / std::sqrt(ss / kWidth + 1e-5);
    for (int j = 0; j < kWidth; ++j)
      want[static_cast<size_t>(j)] =
          x[static_cast<size_t>(j)] * r * host_in(kSeedW, static_cast<size_t>(j));
  } else if (layer == Layer::kSoftmax) {
    const double mx = *std::max_element(x.begin(), x.end());
    double sum = 0;
    for (double v : x) sum += std::exp(v - mx);
    for (int j = 0; j < kWidth; ++j)
      want[static_cast<size_t>(j)] = std::exp(x[static_cast<size_t>(j)] - mx) / sum;
  } else {
    for (int j = 0; j < kWidth; ++j) {
      const double a = x[static_cast<size_t>(j)];
      const double b = host_in(kSeedB, first + static_cast<size_t>(j));
      want[static_cast<size_t>(j)] = layer == Layer::kSwiglu ? a / (1.0 + std::exp(-a)) * b : a + b;
    }
  }
  // bf16 output rounding (2^-9 relative) plus float arithmetic; softmax outputs are ~1/4096.
  const double floor = layer == Layer::kSoftmax ? 1e-6 : 1e-3;
  for (int j = 0; j < kWidth; ++j) {
    const double g = static_cast<double>(__bfloat162float(got[static_cast<size_t>(j)]));
    const double v = want[static_cast<size_t>(j)];
    if (!(std::abs(g - v) <= 1e-2 * std::abs(v) + floor)) return false;
  }
  return true;
}

}  // namespace

void measure_layers(Context& ctx) {
  const size_t mib = size_t{1} << 20;
  const size_t max_total = (ctx.options.quick ? 256 : 1024) * mib;  // bytes moved by one kernel
  // Pools: every layer reads at most 2 arrays and writes 1 of total/2 (norm) or total/3 bytes;
  // sized for the largest set times the rotation.
  const size_t pool_elems = max_total / sizeof(bf16) * 2;
  DeviceBuffer<bf16> a(pool_elems), b(pool_elems), out(pool_elems), w(kWidth);
  fill_random(a.get(), pool_elems, kSeedA, -2.0f, 2.0f, ctx.stream);
  fill_random(b.get(), pool_elems, kSeedB, -2.0f, 2.0f, ctx.stream);
  fill_random(w.get(), kWidth, kSeedW, -2.0f, 2.0f, ctx.stream);

  const char* names[] = {"kernel.rmsnorm", "kernel.softmax", "kernel.swiglu",
                         "kernel.residual_add"};
  const char* desc[] = {
      "RMSNorm over 4096-wide bf16 rows (weight bf16); work = bytes read + written",
      "softmax over 4096-wide bf16 rows; work = bytes read + written",
      "SwiGLU out = silu(gate) * up, bf16 elementwise; work = bytes read + written",
      "residual add out = a + b, bf16 elementwise; work = bytes read + written"};
  for (int li = 0; li < 4; ++li) {
    const Layer layer = static_cast<Layer>(li);
    const int arrays = (layer == Layer::kRmsNorm || layer == Layer::kSoftmax) ? 2 : 3;
    Series s = rotating_bandwidth_series(names[li], desc[li]);
    for (size_t total = mib; total <= max_total; total *= ctx.options.quick ? 4 : 2) {
      const size_t elems = round_up(total / arrays / sizeof(bf16), kWidth);  // elements per array
      const size_t rows = elems / kWidth;
      const size_t sets = std::clamp<size_t>(
          static_cast<size_t>(std::ceil(4.0 * ctx.l2_bytes() / (arrays * elems * sizeof(bf16)))), 1,
          pool_elems / elems);
      ctx.progress(std::string(names[li]) + " " + format_bytes(static_cast<double>(total)));
      auto enqueue = [&](int) {
        for (size_t r = 0; r < sets; ++r) {
          const size_t off = r * elems;
          switch (layer) {
            case Layer::kRmsNorm:  // the executor's kernel (execute_kernels.cu)
              launch_rmsnorm_forward(a.get() + off, w.get(), out.get() + off,
                                     static_cast<int64_t>(rows), kWidth, 1e-5f, ctx.stream);
              break;
            case Layer::kSoftmax:
              softmax_kernel<<<static_cast<unsigned>(rows), kThreads, 0, ctx.stream>>>(
                  a.get() + off, out.get() + off);
              break;
            case Layer::kSwiglu: {
              const size_t n8 = elems / 8;
              const unsigned grid = static_cast<unsigned>(std::min<size_t>(
                  (n8 + 255) / 256, static_cast<size_t>(ctx.prop.multiProcessorCount) * 16));
              swiglu_kernel<<<grid, 256, 0, ctx.stream>>>(a.get() + off, b.get() + off,
                                                          out.get() + off, n8);
              break;
            }
            case Layer::kResidual:  // the executor's kernel
              launch_add(a.get() + off, b.get() + off, out.get() + off, static_cast<int64_t>(elems),
                         ctx.stream);
              break;
          }
          PODSIM_CUDA_CHECK_LAUNCH();
        }
      };
      Point p;
      p.params = {{"bytes", static_cast<double>(arrays * elems * sizeof(bf16))},
                  {"rows", static_cast<double>(rows)},
                  {"width", kWidth},
                  {"sets", static_cast<double>(sets)}};
      p.work = static_cast<double>(arrays * elems * sizeof(bf16));
      p.times_s = per_operation(time_repeats(ctx.stream, 1, ctx.repeats(), enqueue),
                                static_cast<int>(sets));
      PODSIM_CUDA_CHECK(cudaStreamSynchronize(ctx.stream));
      const size_t last = (sets - 1) * elems;
      p.check_passed = check_sample(layer, out, 0, 0) && check_sample(layer, out, last, rows - 1) &&
                       check_sample(layer, out, last, rows / 2);
      s.points.push_back(std::move(p));
    }
    ctx.raw.series.push_back(std::move(s));
  }
}

}  // namespace podsim::calibration::gpu
