#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// What `podsim execute` runs on a real GPU: one rank's share of a transformer
// layer stack, as a list of ops with exact shapes and the time podsim predicts
// for each. Plain data, built by scenarios/execute_plan from the strategies
// op lists (the very ops the simulator prices) and run by the CUDA executor
// in calibration/cuda/execute_*.cu. This layer knows no strategies and no
// hardware models: the shapes and predictions arrive as numbers. C++17 (the
// CUDA sources include it).

namespace podsim::calibration {

/// The real kernel step an op runs. Every step reads and writes fixed
/// tensors of the executor's dense Llama-style layer (execute_layer.cu), so
/// the ops of a pass form a real forward and backward with real data flow.
/// Step names equal the strategies op names (the op lists of strategies/workload.h).
enum class ExecStep : uint8_t {
  // forward (and recompute)
  kAttnNorm,
  kAttnInputGather,
  kQkv,
  kRope,
  kAttnCore,
  kAttnOut,
  kAttnReduce,
  kAttnResidual,
  kMlpNorm,
  kMlpInputGather,
  kMlpFc1,
  kMlpSwiglu,
  kMlpFc2,
  kMlpReduce,
  kMlpResidual,
  // backward
  kMlpFc2DoutGather,
  kMlpFc2Dgrad,
  kMlpFc2Wgrad,
  kMlpSwigluBwd,
  kMlpFc1InputRegather,
  kMlpFc1Dgrad,
  kMlpFc1DgradReduce,
  kMlpFc1Wgrad,
  kMlpNormBwd,
  kAttnOutDoutGather,
  kAttnOutDgrad,
  kAttnOutWgrad,
  kAttnCoreBwd,
  kRopeBwd,
  kQkvInputRegather,
  kQkvDgrad,
  kQkvDgradReduce,
  kQkvWgrad,
  kAttnNormBwd,
  // optimizer (over the rank's parameters of the whole stack)
  kGradNorm,
  kAdamStep,
};

/// The step's name ("qkv", "attn_core_bwd", ...), equal to the op name.
std::string_view to_string(ExecStep step);
/// The step an op name maps to, or nullopt (an op the executor cannot run).
std::optional<ExecStep> exec_step_from_name(std::string_view name);

/// How errors are grouped: by what limits the op.
enum class OpClass : uint8_t { kGemm, kAttention, kMemoryBound, kOptimizer, kCollective };
inline constexpr int kOpClasses = 5;
std::string_view to_string(OpClass op_class);

/// When an op runs in a training step.
enum class ExecPhase : uint8_t { kForward, kRecompute, kBackward, kOptimizer };
std::string_view to_string(ExecPhase phase);

/// Collectives inside a layer (TP; the executor supports no CP/EP).
enum class ExecCollective : uint8_t { kAllReduce, kAllGather, kReduceScatter };
std::string_view to_string(ExecCollective kind);

/// Row-major C[m x n] = A[m x k] B[k x n] (the strategies convention), `batch` times.
struct ExecGemmShape {
  int64_t m = 0, n = 0, k = 0, batch = 1;
};
bool operator==(const ExecGemmShape& a, const ExecGemmShape& b);

/// Causal flash attention: `batch` sequences, `heads` query heads sharing
/// `kv_heads` K/V heads, q_len queries against kv_len keys.
struct ExecAttentionShape {
  int64_t batch = 0, heads = 0, kv_heads = 0, q_len = 0, kv_len = 0, head_dim = 0;
  bool causal = true;
};
bool operator==(const ExecAttentionShape& a, const ExecAttentionShape& b);

/// One transformer layer as one rank holds it (per micro-batch). Dense,
/// Llama style: RMSNorm, rotary positions, grouped-query attention, SwiGLU
/// MLP, no biases, no dropout, bf16 activations.
struct ExecLayerShape {
  int64_t batch = 0;        ///< sequences per micro-batch (b)
  int64_t seq = 0;          ///< tokens per sequence (s; no context parallelism)
  int64_t tokens = 0;       ///< b * s: rows of the column-parallel GEMMs
  int64_t norm_tokens = 0;  ///< tokens / tp with sequence parallelism, else tokens
  int64_t hidden = 0;
  int64_t heads = 0;     ///< query heads of this rank
  int64_t kv_heads = 0;  ///< K/V heads of this rank
  int64_t head_dim = 0;
  int64_t ffn = 0;  ///< MLP hidden size of this rank (gate and up each)
  int64_t tp = 1;
  bool sequence_parallel = false;
  /// Rotary base. Llama 3 uses 500000 (its params.json rope_theta); the value
  /// changes no shape or time, only what the correctness check computes.
  double rope_theta = 500000.0;
  /// RMSNorm epsilon (Llama 3 norm_eps 1e-5).
  double norm_eps = 1e-5;

  /// Columns of the fused QKV product: (heads + 2 kv_heads) * head_dim.
  int64_t qkv_columns() const { return (heads + 2 * kv_heads) * head_dim; }
  /// Columns of attention's output: heads * head_dim.
  int64_t attn_columns() const { return heads * head_dim; }
};

/// One reason a layer shape cannot run on the executor's kernels.
struct ExecLimit {
  /// What is wrong: "head_dim", "seq_len", "heads", "hidden", "ffn",
  /// "micro_batch" or "tp" (for the caller's JSON path).
  std::string field;
  std::string message;
};
/// Every reason (head_dim 128 only, sequence a multiple of 64, ...); empty = it can run.
std::vector<ExecLimit> executor_limits(const ExecLayerShape& shape);

/// The GEMM the executor's data flow runs for `step` (dgrad: dX = dY W^T;
/// wgrad: dW = X^T dY), or nullopt for a step that is not a GEMM.
std::optional<ExecGemmShape> expected_gemm(ExecStep step, const ExecLayerShape& shape);
/// The attention call of kAttnCore / kAttnCoreBwd, or nullopt.
std::optional<ExecAttentionShape> expected_attention(ExecStep step, const ExecLayerShape& shape);
/// Bytes the executor's memory-bound kernel for `step` reads and writes (0
/// for GEMMs, attention and collectives; the optimizer steps per parameter
/// times `params`).
double executor_bytes(ExecStep step, const ExecLayerShape& shape, double params);

/// Parameters of one layer as the executor lays them out, in this order:
/// W_qkv [hidden x qkv_columns], W_o [attn_columns x hidden], W_1 [hidden x
/// 2 ffn] (gate | up), W_2 [ffn x hidden], norm weights 2 x [hidden].
struct LayerParamLayout {
  int64_t qkv = 0, out = 0, fc1 = 0, fc2 = 0, norm1 = 0, norm2 = 0;  ///< offsets (elements)
  int64_t total = 0;                                                 ///< elements per layer
};
LayerParamLayout layer_param_layout(const ExecLayerShape& shape);

/// One op of the executed work: what it is, how often it runs, what podsim
/// predicts for one instance.
struct ExecOp {
  std::string name;
  ExecStep step = ExecStep::kAttnNorm;
  OpClass op_class = OpClass::kMemoryBound;
  ExecPhase phase = ExecPhase::kForward;
  /// Instances per layer (per pass for optimizer ops).
  int64_t count = 1;
  ExecGemmShape gemm;            ///< kGemm
  ExecAttentionShape attention;  ///< kAttention
  /// Memory-bound and optimizer ops: the bytes the model counts; collectives:
  /// the nccl-tests size.
  double bytes = 0;
  double flops = 0;  ///< per instance (hardware FLOPs), 0 for collectives
  ExecCollective collective = ExecCollective::kAllReduce;  ///< kCollective
  int64_t group_size = 1;                                  ///< kCollective: ranks
  /// Seconds podsim predicts for one instance; for collectives the
  /// collective model on the scenario's fabric, priced alone.
  double predicted_s = 0;
  /// What set the prediction ("compute", "memory", "launch", or the
  /// collective's algorithm and protocol).
  std::string predicted_bound;
};

/// Adam hyper-parameters of the executed optimizer step (Llama 3: AdamW,
/// beta2 0.95, weight decay 0.1, gradient clipping at 1.0). They change no
/// time, only the values the correctness check compares.
struct AdamSettings {
  double lr = 3e-4;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.1;
  double clip_norm = 1.0;
};

/// Everything the executor needs for one run.
struct ExecPlan {
  std::string scenario;
  /// The GPU the predictions are for (GpuSpec::name) and where the model's
  /// efficiency numbers came from ("datasheet" or "profile").
  std::string predicted_gpu;
  std::string prediction_source;
  ExecLayerShape layer;
  int64_t layers = 1;  ///< transformer layers run per pass
  /// One layer's ops in execution order: forward, then the recompute ops of
  /// the recompute mode (if any), then backward.
  std::vector<ExecOp> layer_ops;
  /// The optimizer step over `optimizer_params` parameters (once per pass).
  std::vector<ExecOp> optimizer_ops;
  double optimizer_params = 0;
  /// Weight gradients accumulate in fp32 main grads (grad_format fp32,
  /// Megatron's gradient-accumulation fusion), else in bf16.
  bool fp32_grads = true;
  AdamSettings adam;
  /// Facts the report repeats (what was simplified, what is not run).
  std::vector<std::string> notes;
};

/// The GPU-resident bytes a plan needs (parameters, gradients, optimizer
/// states, saved activations of every layer, temporaries), to refuse a run
/// that cannot fit before allocating anything.
double plan_device_bytes(const ExecPlan& plan);

}  // namespace podsim::calibration
