#pragma once

#include <cstdint>
#include <vector>

#include "calibration/execute_ops.h"

// C++17: the CUDA sources include this header.
// A double-precision host reference of what the executor computes: one
// rank's dense Llama-style layer forward and backward, flash attention's
// math, AdamW. The GPU run is checked against it on small shapes; its own
// backward is checked against finite differences of its forward (tests).
//
// Tensors are row-major std::vector<double>. Tensor-parallel collectives are
// emulated the way the one-GPU executor does it (there is one rank): an
// all-gather copies this rank's rows into every rank's slot, a reduce-scatter
// keeps this rank's slot (rows [0, norm_tokens)) and an all-reduce leaves the
// data as it is.

namespace podsim::calibration {

/// `value` rounded to the nearest bf16 (ties to even), as __float2bfloat16_rn does.
float round_to_bf16(float value);

/// n values uniform in [-scale, scale), rounded to bf16, from a seeded
/// std::mt19937_64 (the same on every platform).
std::vector<double> bf16_uniform(size_t n, uint64_t seed, double scale);

/// A strided view of [batch][heads][rows][head_dim] elements: element (b, h,
/// i, c) is data[b * batch_stride + h * head_stride + i * row_stride + c].
template <class T>
struct HeadView {
  T* data = nullptr;
  int64_t batch_stride = 0, head_stride = 0, row_stride = 0;
  T& at(int64_t b, int64_t h, int64_t i, int64_t c) const {
    return data[b * batch_stride + h * head_stride + i * row_stride + c];
  }
};

/// Causal (or full) attention with `heads` query heads sharing `kv_heads` K/V heads.
struct RefAttentionShape {
  int64_t batch = 0, heads = 0, kv_heads = 0, seq = 0, head_dim = 0;
  bool causal = true;
  double scale = 0;  ///< usually 1 / sqrt(head_dim)
};

/// O = softmax(scale Q K^T) V per head; lse[(b * heads + h) * seq + i] gets
/// each row's log-sum-exp of the scaled scores.
void reference_attention_forward(const RefAttentionShape& shape, HeadView<const double> q,
                                 HeadView<const double> k, HeadView<const double> v,
                                 HeadView<double> o, std::vector<double>& lse);
/// dQ, dK, dV of the attention above, given dO (dK and dV are overwritten;
/// the heads of a K/V group add up).
void reference_attention_backward(const RefAttentionShape& shape, HeadView<const double> q,
                                  HeadView<const double> k, HeadView<const double> v,
                                  HeadView<const double> o, HeadView<const double> d_o,
                                  HeadView<double> dq, HeadView<double> dk, HeadView<double> dv);

/// One query row of one head against its first `keys` key and value rows
/// (contiguous, `head_dim` apart): writes the output row `o` and returns the
/// log-sum-exp of the scaled scores. For spot checks of a long sequence.
double reference_attention_row(const double* q, const double* k, const double* v, int64_t keys,
                               int64_t head_dim, double scale, double* o);
/// dQ of that row, given its dO and the O the forward produced.
void reference_attention_dq_row(const double* q, const double* k, const double* v, const double* o,
                                const double* d_o, int64_t keys, int64_t head_dim, double scale,
                                double* dq);

/// One layer's parameters in the executor's layout (LayerParamLayout):
/// weights [in x out] row-major (Y = X W).
struct RefLayerWeights {
  std::vector<double> qkv, out, fc1, fc2, norm1, norm2;
};

/// What the forward keeps for the backward, and the output.
struct RefLayerState {
  std::vector<double> x;    ///< [norm_tokens x hidden] the layer input
  std::vector<double> xg1;  ///< [tokens x hidden] attention norm output, gathered
  std::vector<double> qkv;  ///< [tokens x qkv_columns] after rotary
  std::vector<double> o;    ///< [tokens x attn_columns] attention output
  std::vector<double> lse;  ///< [batch x heads x seq]
  std::vector<double> h1;   ///< [norm_tokens x hidden] after the attention residual
  std::vector<double> xg2;  ///< [tokens x hidden] MLP norm output, gathered
  std::vector<double> u;    ///< [tokens x 2 ffn] gate | up
  std::vector<double> a;    ///< [tokens x ffn] SwiGLU output
  std::vector<double> out;  ///< [norm_tokens x hidden] the layer output
};

RefLayerState reference_layer_forward(const ExecLayerShape& shape, const RefLayerWeights& w,
                                      std::vector<double> x);

struct RefLayerGrads {
  std::vector<double> dx;  ///< [norm_tokens x hidden]
  RefLayerWeights dw;
};

/// Gradients of the layer given the gradient of its output.
RefLayerGrads reference_layer_backward(const ExecLayerShape& shape, const RefLayerWeights& w,
                                       const RefLayerState& state, const std::vector<double>& dout);

/// Global-norm clipping factor (PyTorch clip_grad_norm_): min(1, clip_norm /
/// (sqrt(grad_sum_squares) + 1e-6)).
double adam_clip_scale(const AdamSettings& adam, double grad_sum_squares);

/// One AdamW step number `step` (1-based) with gradients scaled by
/// `grad_scale`: decoupled weight decay, bias-corrected moments.
void reference_adam(const AdamSettings& adam, int64_t step, double grad_scale,
                    const std::vector<double>& grad, std::vector<double>& param,
                    std::vector<double>& m, std::vector<double>& v);

/// Largest |got - want| over the largest |want|, and the root-mean-square
/// error over the root-mean-square of want: how the checks judge a tensor.
struct TensorError {
  double max_rel = 0;
  double rms_rel = 0;
};
TensorError tensor_error(const std::vector<double>& got, const std::vector<double>& want);

}  // namespace podsim::calibration
