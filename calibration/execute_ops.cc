#include "calibration/execute_ops.h"

#include <array>
#include <utility>

#include "sim/to_double.h"

namespace podsim::calibration {
namespace {

struct StepName {
  ExecStep step;
  std::string_view name;
};

// The strategies op names (the op lists of strategies/workload.h) of a dense Llama-style
// layer and the optimizer, in ExecStep order.
constexpr std::array<StepName, 36> kStepNames{{
    {ExecStep::kAttnNorm, "attn_norm"},
    {ExecStep::kAttnInputGather, "attn_input_gather"},
    {ExecStep::kQkv, "qkv"},
    {ExecStep::kRope, "rope"},
    {ExecStep::kAttnCore, "attn_core"},
    {ExecStep::kAttnOut, "attn_out"},
    {ExecStep::kAttnReduce, "attn_reduce"},
    {ExecStep::kAttnResidual, "attn_residual"},
    {ExecStep::kMlpNorm, "mlp_norm"},
    {ExecStep::kMlpInputGather, "mlp_input_gather"},
    {ExecStep::kMlpFc1, "mlp_fc1"},
    {ExecStep::kMlpSwiglu, "mlp_swiglu"},
    {ExecStep::kMlpFc2, "mlp_fc2"},
    {ExecStep::kMlpReduce, "mlp_reduce"},
    {ExecStep::kMlpResidual, "mlp_residual"},
    {ExecStep::kMlpFc2DoutGather, "mlp_fc2_dout_gather"},
    {ExecStep::kMlpFc2Dgrad, "mlp_fc2_dgrad"},
    {ExecStep::kMlpFc2Wgrad, "mlp_fc2_wgrad"},
    {ExecStep::kMlpSwigluBwd, "mlp_swiglu_bwd"},
    {ExecStep::kMlpFc1InputRegather, "mlp_fc1_input_regather"},
    {ExecStep::kMlpFc1Dgrad, "mlp_fc1_dgrad"},
    {ExecStep::kMlpFc1DgradReduce, "mlp_fc1_dgrad_reduce"},
    {ExecStep::kMlpFc1Wgrad, "mlp_fc1_wgrad"},
    {ExecStep::kMlpNormBwd, "mlp_norm_bwd"},
    {ExecStep::kAttnOutDoutGather, "attn_out_dout_gather"},
    {ExecStep::kAttnOutDgrad, "attn_out_dgrad"},
    {ExecStep::kAttnOutWgrad, "attn_out_wgrad"},
    {ExecStep::kAttnCoreBwd, "attn_core_bwd"},
    {ExecStep::kRopeBwd, "rope_bwd"},
    {ExecStep::kQkvInputRegather, "qkv_input_regather"},
    {ExecStep::kQkvDgrad, "qkv_dgrad"},
    {ExecStep::kQkvDgradReduce, "qkv_dgrad_reduce"},
    {ExecStep::kQkvWgrad, "qkv_wgrad"},
    {ExecStep::kAttnNormBwd, "attn_norm_bwd"},
    {ExecStep::kGradNorm, "grad_norm"},
    {ExecStep::kAdamStep, "adam_step"},
}};

// Largest hidden size the norm kernels hold in registers: 256 threads x 8
// vectors of 8 bf16 (execute_kernels.cu, kNormMaxVec).
constexpr int64_t kMaxNormWidth = 16384;

}  // namespace

bool operator==(const ExecGemmShape& a, const ExecGemmShape& b) {
  return a.m == b.m && a.n == b.n && a.k == b.k && a.batch == b.batch;
}

bool operator==(const ExecAttentionShape& a, const ExecAttentionShape& b) {
  return a.batch == b.batch && a.heads == b.heads && a.kv_heads == b.kv_heads &&
         a.q_len == b.q_len && a.kv_len == b.kv_len && a.head_dim == b.head_dim &&
         a.causal == b.causal;
}

std::string_view to_string(ExecStep step) { return kStepNames[static_cast<size_t>(step)].name; }

std::optional<ExecStep> exec_step_from_name(std::string_view name) {
  for (const StepName& s : kStepNames) {
    if (s.name == name) return s.step;
  }
  return std::nullopt;
}

std::string_view to_string(OpClass op_class) {
  switch (op_class) {
    case OpClass::kGemm:
      return "gemm";
    case OpClass::kAttention:
      return "attention";
    case OpClass::kMemoryBound:
      return "memory-bound";
    case OpClass::kOptimizer:
      return "optimizer";
    case OpClass::kCollective:
      return "collective";
  }
  return "gemm";
}

std::string_view to_string(ExecPhase phase) {
  switch (phase) {
    case ExecPhase::kForward:
      return "forward";
    case ExecPhase::kRecompute:
      return "recompute";
    case ExecPhase::kBackward:
      return "backward";
    case ExecPhase::kOptimizer:
      return "optimizer";
  }
  return "forward";
}

std::string_view to_string(ExecCollective kind) {
  switch (kind) {
    case ExecCollective::kAllReduce:
      return "all_reduce";
    case ExecCollective::kAllGather:
      return "all_gather";
    case ExecCollective::kReduceScatter:
      return "reduce_scatter";
  }
  return "all_reduce";
}

std::vector<ExecLimit> executor_limits(const ExecLayerShape& s) {
  std::vector<ExecLimit> out;
  if (s.head_dim != 128) {
    out.push_back({"head_dim", "head_dim is " + std::to_string(s.head_dim) +
                                   "; the flash-attention kernels run 128-dim heads only"});
  }
  if (s.seq <= 0 || s.seq % 64 != 0) {
    out.push_back({"seq_len", "seq_len " + std::to_string(s.seq) +
                                  " is not a multiple of 64 (the attention kernels' tile)"});
  }
  if (s.heads <= 0 || s.kv_heads <= 0 || s.heads % s.kv_heads != 0) {
    out.push_back({"heads", "the rank's " + std::to_string(s.heads) +
                                " query heads are not a multiple of its " +
                                std::to_string(s.kv_heads) + " K/V heads"});
  }
  if (s.hidden <= 0 || s.hidden % 8 != 0 || s.hidden > kMaxNormWidth) {
    out.push_back({"hidden", "hidden " + std::to_string(s.hidden) +
                                 " must be a positive multiple of 8 and at most 16384 (the norm "
                                 "kernels)"});
  }
  if (s.ffn <= 0 || s.ffn % 8 != 0) {
    out.push_back({"ffn", "the rank's ffn " + std::to_string(s.ffn) +
                              " (ffn_hidden / tp) must be a positive multiple of 8"});
  }
  if (s.batch <= 0 || s.tokens != s.batch * s.seq) {
    out.push_back({"micro_batch", "tokens must equal micro_batch x seq_len"});
  }
  if (s.tp <= 0 ||
      (s.sequence_parallel ? s.norm_tokens * s.tp != s.tokens : s.norm_tokens != s.tokens)) {
    out.push_back({"tp", "with sequence parallelism tp must divide the micro-batch's tokens"});
  }
  return out;
}

std::optional<ExecGemmShape> expected_gemm(ExecStep step, const ExecLayerShape& s) {
  const int64_t t = s.tokens, h = s.hidden, w = s.qkv_columns(), a = s.attn_columns();
  const int64_t f = s.ffn;
  switch (step) {
    case ExecStep::kQkv:
      return ExecGemmShape{t, w, h, 1};
    case ExecStep::kAttnOut:
      return ExecGemmShape{t, h, a, 1};
    case ExecStep::kMlpFc1:
      return ExecGemmShape{t, 2 * f, h, 1};
    case ExecStep::kMlpFc2:
      return ExecGemmShape{t, h, f, 1};
    case ExecStep::kMlpFc2Dgrad:
      return ExecGemmShape{t, f, h, 1};
    case ExecStep::kMlpFc2Wgrad:
      return ExecGemmShape{f, h, t, 1};
    case ExecStep::kMlpFc1Dgrad:
      return ExecGemmShape{t, h, 2 * f, 1};
    case ExecStep::kMlpFc1Wgrad:
      return ExecGemmShape{h, 2 * f, t, 1};
    case ExecStep::kAttnOutDgrad:
      return ExecGemmShape{t, a, h, 1};
    case ExecStep::kAttnOutWgrad:
      return ExecGemmShape{a, h, t, 1};
    case ExecStep::kQkvDgrad:
      return ExecGemmShape{t, h, w, 1};
    case ExecStep::kQkvWgrad:
      return ExecGemmShape{h, w, t, 1};
    default:
      return std::nullopt;
  }
}

std::optional<ExecAttentionShape> expected_attention(ExecStep step, const ExecLayerShape& s) {
  if (step != ExecStep::kAttnCore && step != ExecStep::kAttnCoreBwd) return std::nullopt;
  return ExecAttentionShape{s.batch, s.heads, s.kv_heads, s.seq, s.seq, s.head_dim, true};
}

double executor_bytes(ExecStep step, const ExecLayerShape& s, double params) {
  const double e = 2;  // bf16
  const double row_elems = d(s.norm_tokens) * d(s.hidden);
  const double ffn_elems = d(s.tokens) * d(s.ffn);
  switch (step) {
    case ExecStep::kAttnNorm:
    case ExecStep::kMlpNorm:
      return 2 * row_elems * e + d(s.hidden) * e;  // x in, y out, weights
    case ExecStep::kAttnResidual:
    case ExecStep::kMlpResidual:
      return 3 * row_elems * e;
    case ExecStep::kAttnNormBwd:
    case ExecStep::kMlpNormBwd:
      // x, dy and the residual gradient in, dx out (the weight gradient's
      // per-block partial sums go to fp32 atomics, not counted).
      return 4 * row_elems * e;
    case ExecStep::kRope:
    case ExecStep::kRopeBwd:
      // Q and K in place, plus the cos/sin table (fp32 pairs) once.
      return 2 * d(s.tokens) * d((s.heads + s.kv_heads) * s.head_dim) * e +
             d(s.seq) * d(s.head_dim / 2) * 8;
    case ExecStep::kMlpSwiglu:
      return 3 * ffn_elems * e;
    case ExecStep::kMlpSwigluBwd:
      return 5 * ffn_elems * e;
    case ExecStep::kGradNorm:
      return params * 4;
    case ExecStep::kAdamStep:
      // fp32 grad, master, m, v in; master, m, v and the bf16 weight out.
      return params * (4 + 12 + 12 + 2);
    default:
      return 0;
  }
}

LayerParamLayout layer_param_layout(const ExecLayerShape& s) {
  LayerParamLayout p;
  int64_t at = 0;
  const auto take = [&at](int64_t n) { return std::exchange(at, at + n); };
  p.qkv = take(s.hidden * s.qkv_columns());
  p.out = take(s.attn_columns() * s.hidden);
  p.fc1 = take(s.hidden * 2 * s.ffn);
  p.fc2 = take(s.ffn * s.hidden);
  p.norm1 = take(s.hidden);
  p.norm2 = take(s.hidden);
  p.total = at;
  return p;
}

double plan_device_bytes(const ExecPlan& plan) {
  const ExecLayerShape& s = plan.layer;
  const double layers = d(plan.layers);
  const double t = d(s.tokens), n = d(s.norm_tokens), h = d(s.hidden);
  const double w = d(s.qkv_columns()), a = d(s.attn_columns()), f = d(s.ffn);
  const double rows = d(s.batch) * d(s.heads) * d(s.seq);  // attention statistics
  // bf16 weight, fp32 main grad, fp32 master weight, Adam m and v.
  const double params = layers * d(layer_param_layout(s).total) * (2 + 4 + 4 + 4 + 4);
  // Saved per layer: input, both norm outputs (gathered), QKV, attention
  // output and log-sum-exp, the attention residual, fc1 output, SwiGLU output.
  const double saved = n * h * 2 + 2 * t * h * 2 + t * w * 2 + t * a * 2 + rows * 4 + n * h * 2 +
                       t * 2 * f * 2 + t * f * 2;
  // Temporaries shared by all layers: GEMM outputs (y, the gathered output
  // gradient, dgrad outputs), SwiGLU and attention gradients, attention's fp32
  // dQ accumulator and row statistics, the residual-stream gradients (two
  // alternating, the attention residual's, the top one), the rope table, the
  // cuBLASLt workspace, the last layer's output.
  // (Attention's backward also keeps fp32 partial dK and dV when it splits
  // each K/V head's query heads over blocks: at most 2 x tokens x attn columns.)
  const double temporaries = 3 * t * h * 2 + t * f * 2 + t * 2 * f * 2 + t * a * 2 + t * w * 2 +
                             t * a * 4 + rows * 4 + 4 * n * h * 2 + d(s.seq) * d(s.head_dim) * 4 +
                             64.0 * 1024 * 1024 + n * h * 2 + 2 * t * a * 4;
  return params + layers * saved + temporaries;
}

}  // namespace podsim::calibration
