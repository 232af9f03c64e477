#pragma once

// The memory-bound kernels of the executed layer and optimizer (bf16
// activations, fp32 statistics, fp32 main gradients and optimizer state).
// Launchers are host functions; every tensor is row-major and contiguous.

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace podsim::calibration::gpu {

using bf16 = __nv_bfloat16;

/// Widest row the norm kernels take: 512 threads x 4 vectors of 8 bf16.
inline constexpr int64_t kNormMaxWidth = 16384;

/// out[r] = x[r] / rms(x[r]) * w for `rows` rows of `width` (a multiple of 8).
void launch_rmsnorm_forward(const bf16* x, const bf16* w, bf16* out, int64_t rows, int64_t width,
                            float eps, cudaStream_t stream);

/// dx = residual + (d rmsnorm / dx)^T dy, and dw += sum over rows of
/// dy x / rms(x) (fp32, atomically). `blocks` caps the grid (rows per block
/// loop); dx may alias residual.
void launch_rmsnorm_backward(const bf16* x, const bf16* w, const bf16* dy, const bf16* residual,
                             bf16* dx, float* dw, int64_t rows, int64_t width, float eps,
                             int blocks, cudaStream_t stream);

/// Rotary embedding in place on the first `rotated_heads` heads (of 128)
/// of every row of a [tokens x row_width] tensor; `table` holds (cos, sin)
/// for [seq][64] (position = token % seq). `inverse` applies the transposed
/// rotation (the backward).
void launch_rope(bf16* qkv, const float2* table, int64_t tokens, int64_t seq, int64_t row_width,
                 int64_t rotated_heads, bool inverse, cudaStream_t stream);

/// a[r][j] = silu(u[r][j]) * u[r][ffn + j] for `rows` rows (ffn a multiple of 8).
void launch_swiglu_forward(const bf16* u, bf16* a, int64_t rows, int64_t ffn, cudaStream_t stream);
/// du (gate | up) from u and da.
void launch_swiglu_backward(const bf16* u, const bf16* da, bf16* du, int64_t rows, int64_t ffn,
                            cudaStream_t stream);

/// out = a + b over n elements (a multiple of 8).
void launch_add(const bf16* a, const bf16* b, bf16* out, int64_t n, cudaStream_t stream);

/// *sum_squares = sum of g[i]^2 over n fp32 values (zeroes it first).
void launch_sum_squares(const float* g, int64_t n, double* sum_squares, cudaStream_t stream);

/// Hyper-parameters of one AdamW step; bias corrections c1 = 1 - beta1^t,
/// c2 = 1 - beta2^t computed by the caller.
struct AdamArgs {
  float lr, beta1, beta2, eps, weight_decay, clip_norm, c1, c2;
};
/// AdamW over n parameters with global-norm clipping from *sum_squares:
/// updates the fp32 master weights, m and v, and writes the bf16 weights.
void launch_adam(float* master, float* m, float* v, const float* grad, bf16* weights, int64_t n,
                 const double* sum_squares, const AdamArgs& args, cudaStream_t stream);

/// out[i] = float(in[i]) over n elements.
void launch_bf16_to_float(const bf16* in, float* out, int64_t n, cudaStream_t stream);

}  // namespace podsim::calibration::gpu
