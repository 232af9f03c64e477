#include <algorithm>
#include <stdexcept>
#include <string>

#include "calibration/cuda/check.h"
#include "calibration/cuda/execute_kernels.cuh"
#include "sim/ceil_div.h"

namespace podsim::calibration::gpu {
namespace {

constexpr int kNormThreads = 512;
constexpr int kNormMaxVec = 4;  // uint4 (8 bf16) loads per thread per row
static_assert(kNormThreads * kNormMaxVec * 8 == kNormMaxWidth, "norm width");
constexpr int kThreads = 256;  // elementwise kernels

__device__ __forceinline__ float f(bf16 v) { return __bfloat162float(v); }

/// Sums of (x, y) over the block; every thread gets the result.
template <int kBlock>
__device__ float2 block_sum2(float2 v) {
  __shared__ float2 partial[kBlock / 32];
#pragma unroll
  for (int off = 16; off > 0; off /= 2) {
    v.x += __shfl_xor_sync(0xffffffffu, v.x, off);
    v.y += __shfl_xor_sync(0xffffffffu, v.y, off);
  }
  __syncthreads();  // `partial` may still be read from a previous call
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
  __syncthreads();
  float2 r = partial[0];
#pragma unroll
  for (int i = 1; i < kBlock / 32; ++i) {
    r.x += partial[i].x;
    r.y += partial[i].y;
  }
  return r;
}

unsigned grid_for(int64_t work, int threads) {
  const int64_t blocks = ceil_div(work, threads);
  return static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>(blocks, 65536)));
}

__global__ void __launch_bounds__(kNormThreads)
    rmsnorm_fwd_kernel(const bf16* __restrict__ x, const bf16* __restrict__ w,
                       bf16* __restrict__ out, int vecs, float eps) {
  const size_t row = blockIdx.x;
  const uint4* xr = reinterpret_cast<const uint4*>(x) + row * vecs;
  uint4 v[kNormMaxVec];
  float ss = 0;
#pragma unroll
  for (int i = 0; i < kNormMaxVec; ++i) {
    const int idx = threadIdx.x + i * kNormThreads;
    if (idx < vecs) {
      v[i] = xr[idx];
      const bf16* e = reinterpret_cast<const bf16*>(&v[i]);
#pragma unroll
      for (int j = 0; j < 8; ++j) ss += f(e[j]) * f(e[j]);
    }
  }
  const float r = rsqrtf(block_sum2<kNormThreads>(make_float2(ss, 0.0f)).x / (vecs * 8.0f) + eps);
  uint4* orow = reinterpret_cast<uint4*>(out) + row * vecs;
#pragma unroll
  for (int i = 0; i < kNormMaxVec; ++i) {
    const int idx = threadIdx.x + i * kNormThreads;
    if (idx < vecs) {
      const uint4 wv = reinterpret_cast<const uint4*>(w)[idx];
      const bf16* e = reinterpret_cast<const bf16*>(&v[i]);
      const bf16* we = reinterpret_cast<const bf16*>(&wv);
      uint4 o;
      bf16* oe = reinterpret_cast<bf16*>(&o);
#pragma unroll
      for (int j = 0; j < 8; ++j) oe[j] = __float2bfloat16_rn(f(e[j]) * r * f(we[j]));
      orow[idx] = o;
    }
  }
}

// dx may alias residual: each element is read, then written, by one thread.
__global__ void __launch_bounds__(kNormThreads)
    rmsnorm_bwd_kernel(const bf16* __restrict__ x, const bf16* __restrict__ w,
                       const bf16* __restrict__ dy, const bf16* residual, bf16* dx,
                       float* __restrict__ dw, int64_t rows, int vecs, float eps) {
  float acc[kNormMaxVec][8];
#pragma unroll
  for (int i = 0; i < kNormMaxVec; ++i) {
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[i][j] = 0.0f;
  }
  const float inv_width = 1.0f / (vecs * 8.0f);
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {  // the same trips for the block
    const size_t base = static_cast<size_t>(row) * vecs;
    uint4 xv[kNormMaxVec], dyv[kNormMaxVec];
    float ss = 0, gx = 0;
#pragma unroll
    for (int i = 0; i < kNormMaxVec; ++i) {
      const int idx = threadIdx.x + i * kNormThreads;
      if (idx < vecs) {
        xv[i] = reinterpret_cast<const uint4*>(x)[base + idx];
        dyv[i] = reinterpret_cast<const uint4*>(dy)[base + idx];
        const uint4 wv = reinterpret_cast<const uint4*>(w)[idx];
        const bf16* xe = reinterpret_cast<const bf16*>(&xv[i]);
        const bf16* de = reinterpret_cast<const bf16*>(&dyv[i]);
        const bf16* we = reinterpret_cast<const bf16*>(&wv);
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          ss += f(xe[j]) * f(xe[j]);
          gx += f(de[j]) * f(we[j]) * f(xe[j]);
        }
      }
    }
    const float2 sums = block_sum2<kNormThreads>(make_float2(ss, gx));
    const float inv = rsqrtf(sums.x * inv_width + eps);
    const float c = inv * inv * inv * sums.y * inv_width;
#pragma unroll
    for (int i = 0; i < kNormMaxVec; ++i) {
      const int idx = threadIdx.x + i * kNormThreads;
      if (idx < vecs) {
        const uint4 wv = reinterpret_cast<const uint4*>(w)[idx];
        const uint4 rv = reinterpret_cast<const uint4*>(residual)[base + idx];
        const bf16* xe = reinterpret_cast<const bf16*>(&xv[i]);
        const bf16* de = reinterpret_cast<const bf16*>(&dyv[i]);
        const bf16* we = reinterpret_cast<const bf16*>(&wv);
        const bf16* re = reinterpret_cast<const bf16*>(&rv);
        uint4 o;
        bf16* oe = reinterpret_cast<bf16*>(&o);
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          const float xj = f(xe[j]), dj = f(de[j]);
          oe[j] = __float2bfloat16_rn(f(re[j]) + inv * dj * f(we[j]) - xj * c);
          acc[i][j] += dj * xj * inv;
        }
        reinterpret_cast<uint4*>(dx)[base + idx] = o;
      }
    }
  }
#pragma unroll
  for (int i = 0; i < kNormMaxVec; ++i) {
    const int idx = threadIdx.x + i * kNormThreads;
    if (idx < vecs) {
#pragma unroll
      for (int j = 0; j < 8; ++j) atomicAdd(dw + idx * 8 + j, acc[i][j]);
    }
  }
}

// One thread rotates columns (c, c+1) against (c+64, c+65) of one head of one token.
__global__ void rope_kernel(bf16* __restrict__ qkv, const float2* __restrict__ table,
                            int64_t tokens, int64_t seq, int64_t row_width, int64_t heads,
                            float sign) {
  const int64_t total = tokens * heads * 32;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
       idx += stride) {
    const int c = static_cast<int>(idx % 32) * 2;
    const int64_t th = idx / 32;
    const int64_t h = th % heads;
    const int64_t t = th / heads;
    const int64_t pos = t % seq;
    bf16* base = qkv + t * row_width + h * 128;
    const __nv_bfloat162 lo = *reinterpret_cast<const __nv_bfloat162*>(base + c);
    const __nv_bfloat162 hi = *reinterpret_cast<const __nv_bfloat162*>(base + c + 64);
    const float2 a = table[pos * 64 + c], b = table[pos * 64 + c + 1];
    const float x1a = __low2float(lo), x1b = __high2float(lo);
    const float x2a = __low2float(hi), x2b = __high2float(hi);
    const float sa = sign * a.y, sb = sign * b.y;
    *reinterpret_cast<__nv_bfloat162*>(base + c) =
        __floats2bfloat162_rn(x1a * a.x - x2a * sa, x1b * b.x - x2b * sb);
    *reinterpret_cast<__nv_bfloat162*>(base + c + 64) =
        __floats2bfloat162_rn(x2a * a.x + x1a * sa, x2b * b.x + x1b * sb);
  }
}

__device__ __forceinline__ float sigmoid(float v) { return 1.0f / (1.0f + __expf(-v)); }

/// The 8 gate and 8 up values at columns c..c+7 of row r of u = [gate | up].
struct GateUp {
  uint4 gate, up;
};
__device__ __forceinline__ GateUp load_gate_up(const bf16* u, int64_t r, int64_t c, int64_t ffn) {
  return {*reinterpret_cast<const uint4*>(u + r * 2 * ffn + c),
          *reinterpret_cast<const uint4*>(u + r * 2 * ffn + ffn + c)};
}

__global__ void swiglu_fwd_kernel(const bf16* __restrict__ u, bf16* __restrict__ a, int64_t rows,
                                  int64_t ffn) {
  const int64_t fv = ffn / 8, total = rows * fv;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
       idx += stride) {
    const int64_t r = idx / fv, c = (idx % fv) * 8;
    const GateUp in = load_gate_up(u, r, c, ffn);
    const bf16* ge = reinterpret_cast<const bf16*>(&in.gate);
    const bf16* ue = reinterpret_cast<const bf16*>(&in.up);
    uint4 o;
    bf16* oe = reinterpret_cast<bf16*>(&o);
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const float g = f(ge[j]);
      oe[j] = __float2bfloat16_rn(g * sigmoid(g) * f(ue[j]));
    }
    *reinterpret_cast<uint4*>(a + r * ffn + c) = o;
  }
}

__global__ void swiglu_bwd_kernel(const bf16* __restrict__ u, const bf16* __restrict__ da,
                                  bf16* __restrict__ du, int64_t rows, int64_t ffn) {
  const int64_t fv = ffn / 8, total = rows * fv;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
       idx += stride) {
    const int64_t r = idx / fv, c = (idx % fv) * 8;
    const GateUp in = load_gate_up(u, r, c, ffn);
    const uint4 dv = *reinterpret_cast<const uint4*>(da + r * ffn + c);
    const bf16* ge = reinterpret_cast<const bf16*>(&in.gate);
    const bf16* ue = reinterpret_cast<const bf16*>(&in.up);
    const bf16* de = reinterpret_cast<const bf16*>(&dv);
    uint4 dg, dup;
    bf16* dge = reinterpret_cast<bf16*>(&dg);
    bf16* due = reinterpret_cast<bf16*>(&dup);
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const float g = f(ge[j]), up = f(ue[j]), d = f(de[j]);
      const float s = sigmoid(g);
      dge[j] = __float2bfloat16_rn(d * up * s * (1.0f + g * (1.0f - s)));
      due[j] = __float2bfloat16_rn(d * g * s);
    }
    *reinterpret_cast<uint4*>(du + r * 2 * ffn + c) = dg;
    *reinterpret_cast<uint4*>(du + r * 2 * ffn + ffn + c) = dup;
  }
}

__global__ void add_kernel(const bf16* __restrict__ a, const bf16* __restrict__ b,
                           bf16* __restrict__ out, int64_t n8) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n8;
       i += stride) {
    const uint4 av = reinterpret_cast<const uint4*>(a)[i];
    const uint4 bv = reinterpret_cast<const uint4*>(b)[i];
    const bf16* ae = reinterpret_cast<const bf16*>(&av);
    const bf16* be = reinterpret_cast<const bf16*>(&bv);
    uint4 o;
    bf16* oe = reinterpret_cast<bf16*>(&o);
#pragma unroll
    for (int j = 0; j < 8; ++j) oe[j] = __float2bfloat16_rn(f(ae[j]) + f(be[j]));
    reinterpret_cast<uint4*>(out)[i] = o;
  }
}

__global__ void __launch_bounds__(kThreads)
    sum_squares_kernel(const float* __restrict__ g, int64_t n, double* __restrict__ out) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  float acc = 0;
  const int64_t n4 = n / 4;
  for (int64_t i = first; i < n4; i += stride) {
    const float4 v = reinterpret_cast<const float4*>(g)[i];
    acc += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
  }
  for (int64_t i = n4 * 4 + first; i < n; i += stride) acc += g[i] * g[i];
  const float total = block_sum2<kThreads>(make_float2(acc, 0.0f)).x;
  if (threadIdx.x == 0) atomicAdd(out, static_cast<double>(total));
}

__device__ __forceinline__ void adam_one(float& p, float& m, float& v, float grad, float clip,
                                         const AdamArgs& a) {
  const float g = grad * clip;
  m = a.beta1 * m + (1.0f - a.beta1) * g;
  v = a.beta2 * v + (1.0f - a.beta2) * g * g;
  p -= a.lr * a.weight_decay * p;
  p -= a.lr * (m / a.c1) / (sqrtf(v / a.c2) + a.eps);
}

__global__ void __launch_bounds__(kThreads)
    adam_kernel(float* __restrict__ master, float* __restrict__ m, float* __restrict__ v,
                const float* __restrict__ grad, bf16* __restrict__ weights, int64_t n,
                const double* __restrict__ sum_squares, AdamArgs args) {
  const float clip = fminf(1.0f, args.clip_norm / (static_cast<float>(sqrt(*sum_squares)) + 1e-6f));
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t n4 = n / 4;
  for (int64_t i = first; i < n4; i += stride) {
    float4 p = reinterpret_cast<float4*>(master)[i];
    float4 mm = reinterpret_cast<float4*>(m)[i];
    float4 vv = reinterpret_cast<float4*>(v)[i];
    const float4 g = reinterpret_cast<const float4*>(grad)[i];
    adam_one(p.x, mm.x, vv.x, g.x, clip, args);
    adam_one(p.y, mm.y, vv.y, g.y, clip, args);
    adam_one(p.z, mm.z, vv.z, g.z, clip, args);
    adam_one(p.w, mm.w, vv.w, g.w, clip, args);
    reinterpret_cast<float4*>(master)[i] = p;
    reinterpret_cast<float4*>(m)[i] = mm;
    reinterpret_cast<float4*>(v)[i] = vv;
    __nv_bfloat162* wout = reinterpret_cast<__nv_bfloat162*>(weights + 4 * i);
    wout[0] = __floats2bfloat162_rn(p.x, p.y);
    wout[1] = __floats2bfloat162_rn(p.z, p.w);
  }
  for (int64_t i = n4 * 4 + first; i < n; i += stride) {
    adam_one(master[i], m[i], v[i], grad[i], clip, args);
    weights[i] = __float2bfloat16_rn(master[i]);
  }
}

__global__ void bf16_to_float_kernel(const bf16* __restrict__ in, float* __restrict__ out,
                                     int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    out[i] = f(in[i]);
  }
}

void require(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string("execute kernels: ") + what);
}

}  // namespace

void launch_rmsnorm_forward(const bf16* x, const bf16* w, bf16* out, int64_t rows, int64_t width,
                            float eps, cudaStream_t stream) {
  require(width % 8 == 0 && width <= kNormMaxWidth && rows > 0, "norm width");
  rmsnorm_fwd_kernel<<<static_cast<unsigned>(rows), kNormThreads, 0, stream>>>(
      x, w, out, static_cast<int>(width / 8), eps);
  PODSIM_CUDA_CHECK_LAUNCH();
}

void launch_rmsnorm_backward(const bf16* x, const bf16* w, const bf16* dy, const bf16* residual,
                             bf16* dx, float* dw, int64_t rows, int64_t width, float eps,
                             int blocks, cudaStream_t stream) {
  require(width % 8 == 0 && width <= kNormMaxWidth && rows > 0 && blocks > 0, "norm width");
  const auto grid = static_cast<unsigned>(std::min<int64_t>(rows, blocks));
  rmsnorm_bwd_kernel<<<grid, kNormThreads, 0, stream>>>(x, w, dy, residual, dx, dw, rows,
                                                        static_cast<int>(width / 8), eps);
  PODSIM_CUDA_CHECK_LAUNCH();
}

void launch_rope(bf16* qkv, const float2* table, int64_t tokens, int64_t seq, int64_t row_width,
                 int64_t rotated_heads, bool inverse, cudaStream_t stream) {
  require(row_width % 8 == 0 && seq > 0, "rope row width");
  rope_kernel<<<grid_for(tokens * rotated_heads * 32, kThreads), kThreads, 0, stream>>>(
      qkv, table, tokens, seq, row_width, rotated_heads, inverse ? -1.0f : 1.0f);
  PODSIM_CUDA_CHECK_LAUNCH();
}

void launch_swiglu_forward(const bf16* u, bf16* a, int64_t rows, int64_t ffn, cudaStream_t stream) {
  require(ffn % 8 == 0, "ffn must be a multiple of 8");
  swiglu_fwd_kernel<<<grid_for(rows * ffn / 8, kThreads), kThreads, 0, stream>>>(u, a, rows, ffn);
  PODSIM_CUDA_CHECK_LAUNCH();
}

void launch_swiglu_backward(const bf16* u, const bf16* da, bf16* du, int64_t rows, int64_t ffn,
                            cudaStream_t stream) {
  require(ffn % 8 == 0, "ffn must be a multiple of 8");
  swiglu_bwd_kernel<<<grid_for(rows * ffn / 8, kThreads), kThreads, 0, stream>>>(u, da, du, rows,
                                                                                 ffn);
  PODSIM_CUDA_CHECK_LAUNCH();
}

void launch_add(const bf16* a, const bf16* b, bf16* out, int64_t n, cudaStream_t stream) {
  require(n % 8 == 0, "add: n must be a multiple of 8");
  add_kernel<<<grid_for(n / 8, kThreads), kThreads, 0, stream>>>(a, b, out, n / 8);
  PODSIM_CUDA_CHECK_LAUNCH();
}

void launch_sum_squares(const float* g, int64_t n, double* sum_squares, cudaStream_t stream) {
  PODSIM_CUDA_CHECK(cudaMemsetAsync(sum_squares, 0, sizeof(double), stream));
  sum_squares_kernel<<<grid_for(n / 4 + 1, kThreads), kThreads, 0, stream>>>(g, n, sum_squares);
  PODSIM_CUDA_CHECK_LAUNCH();
}

void launch_adam(float* master, float* m, float* v, const float* grad, bf16* weights, int64_t n,
                 const double* sum_squares, const AdamArgs& args, cudaStream_t stream) {
  adam_kernel<<<grid_for(n / 4 + 1, kThreads), kThreads, 0, stream>>>(master, m, v, grad, weights,
                                                                      n, sum_squares, args);
  PODSIM_CUDA_CHECK_LAUNCH();
}

void launch_bf16_to_float(const bf16* in, float* out, int64_t n, cudaStream_t stream) {
  bf16_to_float_kernel<<<grid_for(n, kThreads), kThreads, 0, stream>>>(in, out, n);
  PODSIM_CUDA_CHECK_LAUNCH();
}

}  // namespace podsim::calibration::gpu
