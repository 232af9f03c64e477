#pragma once

// The executor: one rank's dense Llama-style layer stack on one GPU, with
// the tensors every op of an ExecPlan reads and writes, so that the plan's
// forward, recompute, backward and optimizer ops form a real training pass.
//
// Tensors (row-major, bf16 unless said; N = norm_tokens, T = tokens):
//   per layer l:  x[l] [N x H] (input; x[L] is the stack's output), xg1[l]
//                 [T x H] (attention norm output, gathered), qkv[l] [T x W]
//                 (Q | K | V heads, rotated in place), o[l] [T x A], lse[l]
//                 fp32, h1[l] [N x H], xg2[l] [T x H], u[l] [T x 2F] (gate |
//                 up), a[l] [T x F]
//   temporaries:  y [T x H] (row-parallel GEMM outputs), dgath [T x H]
//                 (gathered output gradients, sequence parallel), da, du,
//                 dxn [T x H] (column-parallel dgrad outputs), d_o, dqkv,
//                 attention's delta and fp32 dQ, dh1, two alternating
//                 residual-stream gradients, the top gradient dy
//   parameters:   bf16 weights, fp32 main grads, fp32 master weights, Adam m
//                 and v, all in LayerParamLayout order, layer after layer
// Weights are [in x out] (Y = X W): dgrad is dX = dY W^T, wgrad dW += X^T dY
// (fp32 accumulation into the main grads, Megatron's gradient-accumulation fusion).

#include <memory>
#include <vector>

#include "calibration/cuda/attention_kernels.cuh"
#include "calibration/cuda/common.cuh"
#include "calibration/cuda/cublaslt.cuh"
#include "calibration/cuda/execute_kernels.cuh"
#include "calibration/execute_ops.h"

namespace podsim::calibration::gpu {

/// What a pass does with the layer's tensor-parallel collectives on one GPU.
enum class CollectiveMode {
  kSkip,     ///< nothing (timing: the collectives are timed on their own)
  kEmulate,  ///< one rank's view: all-gather copies this rank's rows into
             ///< every slot, reduce-scatter keeps this rank's slot, all-reduce
             ///< leaves the data (the host reference does the same)
};

/// One GEMM as the executor runs it: row-major c (+)= op(a) op(b).
struct GemmCall {
  const RowMajorGemm* gemm = nullptr;
  const bf16* a = nullptr;
  const bf16* b = nullptr;
  void* c = nullptr;
};

/// One op instance of a training pass.
struct PassItem {
  bool optimizer = false;  ///< an ExecPlan::optimizer_ops entry, else a layer_ops entry
  size_t op = 0;           ///< index into those ops
  int64_t layer = 0;
};

/// The op instances of one pass in execution order: the forward ops of
/// layers 0..L-1; then, from the last layer down, each layer's recompute and
/// backward ops; then the optimizer ops. Collectives are left out unless
/// `collectives`.
std::vector<PassItem> pass_items(const ExecPlan& plan, bool collectives);

class LayerExecutor {
 public:
  /// Allocates everything `plan` needs (activations and temporaries filled
  /// with random bf16 values, so that a pass that skips the collectives
  /// still multiplies realistic data; gradients and moments zero) and plans
  /// its GEMMs. Throws
  /// std::runtime_error when an op of the plan is not what the executor's
  /// data flow runs (a shape that differs from expected_gemm, a step it does
  /// not know), CudaError when memory runs out.
  LayerExecutor(const ExecPlan& plan, cudaStream_t stream, cublasLtHandle_t lt);
  ~LayerExecutor();
  LayerExecutor(const LayerExecutor&) = delete;
  LayerExecutor& operator=(const LayerExecutor&) = delete;

  const ExecPlan& plan() const { return plan_; }

  /// Random bf16 weights (uniform, +-1/sqrt(fan-in); norm weights in
  /// [0.5, 1.5)), their fp32 master copy, a random input and top gradient.
  void init_random(uint64_t seed);
  /// Sets one layer's parameters (LayerParamLayout order; values should be
  /// bf16-exact): bf16 weights and fp32 master copy.
  void upload_layer(int64_t layer, const std::vector<double>& params);
  /// Sets the stack's input x[0] and the gradient of its output.
  void upload_input(const std::vector<double>& x0, const std::vector<double>& dy_top);
  void zero_grads();

  /// Enqueues one instance of layer op `op` on layer `layer`. Backward ops
  /// take the gradient of x[layer + 1] (the top gradient for the last layer)
  /// and leave the gradient of x[layer] in input_gradient(layer).
  void run_layer_op(const ExecOp& op, int64_t layer, CollectiveMode mode);
  /// Enqueues an optimizer op; `step` (1-based) sets Adam's bias corrections.
  void run_optimizer_op(const ExecOp& op, int64_t step);
  /// Enqueues one pass item (optimizer step number `step`).
  void run_item(const PassItem& item, CollectiveMode mode, int64_t step);

  /// The GEMM `step` runs on `layer` (gemm null when it is not a GEMM).
  GemmCall gemm_call(ExecStep step, int64_t layer) const;

  // What the checks read.
  int64_t layer_params() const { return layout_.total; }
  const bf16* layer_input(int64_t layer) const { return x_[static_cast<size_t>(layer)].get(); }
  const bf16* input_gradient(int64_t layer) const;
  const float* grads() const { return grads_.get(); }
  const float* master() const { return master_.get(); }
  const float* adam_m() const { return m_.get(); }
  const float* adam_v() const { return v_.get(); }
  const bf16* weights() const { return weights_.get(); }
  const double* grad_sum_squares() const { return sum_squares_.get(); }
  AttnShape attention_shape() const;
  /// Q, K, V (rotated) and O of `layer`; dO, dQ, dK, dV of the last backward.
  AttnTensor q(int64_t layer) const;
  AttnTensor k(int64_t layer) const;
  AttnTensor v(int64_t layer) const;
  AttnTensor o(int64_t layer) const;
  AttnTensor d_o() const;
  AttnTensor dq() const;
  const float* lse(int64_t layer) const { return lse_[static_cast<size_t>(layer)].get(); }

 private:
  bf16* weight(int64_t layer, int64_t offset) const;
  float* grad(int64_t layer, int64_t offset) const;
  const bf16* output_gradient(int64_t layer) const;  ///< gradient of x[layer + 1]
  bf16* gathered_gradient(const bf16* rows) const;   ///< dgath with SP, else rows
  void replicate_rows(bf16* tensor) const;           ///< emulated all-gather
  void gemm(const GemmCall& call) const;
  const RowMajorGemm& plan_gemm(const RowMajorGemmSpec& spec);
  void check_ops() const;

  ExecPlan plan_;
  ExecLayerShape s_;
  LayerParamLayout layout_;
  cudaStream_t stream_;
  cublasLtHandle_t lt_;
  int sm_count_ = 0;

  std::vector<DeviceBuffer<bf16>> x_, xg1_, qkv_, o_, h1_, xg2_, u_, a_;
  std::vector<DeviceBuffer<float>> lse_;
  DeviceBuffer<bf16> y_, dgath_, da_, du_, dxn_, d_o_, dqkv_, dh1_, dy_top_;
  DeviceBuffer<bf16> chain_[2];
  DeviceBuffer<float> delta_, dq_acc_;
  int kv_splits_ = 1;                ///< attention backward's split of each K/V head's queries
  DeviceBuffer<float> dkv_scratch_;  ///< its fp32 partial dK, dV
  DeviceBuffer<float2> rope_table_;
  DeviceBuffer<bf16> weights_;
  DeviceBuffer<float> grads_, master_, m_, v_;
  DeviceBuffer<double> sum_squares_;
  DeviceBuffer<unsigned char> workspace_;
  std::vector<std::pair<RowMajorGemmSpec, std::unique_ptr<RowMajorGemm>>> gemms_;
  /// The GEMM plan of each GEMM step (index by ExecStep), null for others.
  std::vector<const RowMajorGemm*> step_gemm_;
};

}  // namespace podsim::calibration::gpu
