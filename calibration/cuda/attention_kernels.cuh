#pragma once

// podsim's own FlashAttention-2-style kernels (tiled, online softmax,
// mma.sync m16n8k16, bf16 in, fp32 accumulate), causal or full, grouped-query,
// 128-dim heads: the attention the calibration benchmark times and the
// executor runs. Q, K, V, O and their gradients are strided views, so they
// can live in a [b][h][s][d] tensor or inside a token-major fused QKV tensor;
// the softmax statistics (lse, delta) and dQ's fp32 accumulator are
// contiguous [b][heads][s] (x d).

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace podsim::calibration::gpu {

/// The only head size the kernels run.
inline constexpr int kAttnHeadDim = 128;
/// The sequence must be a multiple of this (the query and key tiles).
inline constexpr int kAttnSeqMultiple = 64;

/// Element (b, h, i, c) of a view is at base + b*batch + h*head + i*row + c.
/// Every row must start 16-byte aligned (strides multiples of 8).
struct AttnStrides {
  int64_t batch = 0, head = 0, row = 0;
};

/// [batch][heads][seq][128] stored contiguously.
inline AttnStrides contiguous_heads(int heads, int seq) {
  return {static_cast<int64_t>(heads) * seq * kAttnHeadDim,
          static_cast<int64_t>(seq) * kAttnHeadDim, kAttnHeadDim};
}

struct AttnShape {
  int b = 0, hq = 0, hkv = 0, s = 0;
  float scale = 0;
  bool causal = true;
};

struct AttnTensor {
  __nv_bfloat16* ptr = nullptr;
  AttnStrides strides;
};

/// Checks that `prop`'s device can run the kernels (compute capability 8.0+,
/// enough opt-in shared memory) and raises their shared-memory limit on the
/// current device. Throws std::runtime_error naming what is missing.
void prepare_attention_kernels(const cudaDeviceProp& prop);

/// Throws std::runtime_error when the kernels cannot run `shape` (sequence
/// not a multiple of 64, heads not a multiple of K/V heads).
void check_attention_shape(const AttnShape& shape);

/// O = softmax(scale Q K^T) V and lse (fp32, [b][hq][s], natural log).
void launch_attention_forward(const AttnShape& shape, AttnTensor q, AttnTensor k, AttnTensor v,
                              AttnTensor o, float* lse, cudaStream_t stream);

/// dQ, dK, dV from Q, K, V, O, dO and the forward's lse. `delta` ([b][hq][s])
/// and `dq_acc` ([b][hq][s][128] fp32) are scratch the caller provides.
/// With kv_splits > 1 each K/V head's query heads are shared among that many
/// blocks, whose fp32 partial dK and dV (`dkv_scratch`, of
/// attention_backward_scratch_floats) a second kernel adds up.
struct AttnBackwardTensors {
  AttnTensor q, k, v, o, d_o, dq, dk, dv;
  const float* lse = nullptr;
  float* delta = nullptr;
  float* dq_acc = nullptr;
  int kv_splits = 1;
  float* dkv_scratch = nullptr;
};

/// The smallest split of each K/V head's query heads (a divisor of hq / hkv)
/// that gives the backward kernel two waves of blocks on `sms` SMs.
int attention_backward_splits(const AttnShape& shape, int sms);
/// Floats of scratch the backward needs with `splits` (0 for 1).
size_t attention_backward_scratch_floats(const AttnShape& shape, int splits);
void launch_attention_backward(const AttnShape& shape, const AttnBackwardTensors& t,
                               cudaStream_t stream);

}  // namespace podsim::calibration::gpu
