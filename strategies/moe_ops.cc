// The mixture-of-experts block of a layer.
#include <cstdint>

#include "strategies/op_builder.h"

namespace podsim::strategies::ops {
namespace {

// MoE with Megatron's all-to-all token dispatcher, experts tensor-parallel
// like the dense layers. Load-balance assumption: routing is perfectly
// balanced (every expert receives tokens*top_k/experts tokens from every
// rank, no token dropped, capacity factor 1).
struct MoeSizes {
  double routed_rows = 0;       ///< token copies this rank routes: norm_tokens * top_k
  double expert_rows = 0;       ///< rows through the local experts: tokens * top_k
  int64_t rows_per_expert = 0;  ///< expert_rows / local experts, rounded up
  int64_t local_experts = 0;
  int64_t ffn = 0;         ///< per expert, per TP rank
  int64_t shared_ffn = 0;  ///< shared experts' total ffn per TP rank
  int64_t experts = 0;
  int64_t n1 = 0;           ///< first expert GEMM's columns (gate + up for SwiGLU)
  double h = 0;             ///< hidden
  double routed_bytes = 0;  ///< token copies this rank sends to (and gets from) the experts
};
MoeSizes moe_sizes(const Job& job, const RankShape& r) {
  const MoeShape& m = *job.model.moe;
  MoeSizes s;
  s.routed_rows = d(r.norm_tokens) * d(m.top_k);
  s.expert_rows = d(r.tokens) * d(m.top_k);
  s.local_experts = m.experts / r.ep;
  s.rows_per_expert = (r.tokens * m.top_k + s.local_experts - 1) / s.local_experts;
  s.ffn = m.ffn_hidden / r.tp;
  s.shared_ffn = m.shared_experts * m.ffn_hidden / r.tp;
  s.experts = m.experts;
  s.n1 = mlp_in_columns(job, s.ffn);
  s.h = d(r.hidden);
  s.routed_bytes = s.routed_rows * s.h * r.e;
  return s;
}

/// Share of a router product that is model work: 1/tp when every TP rank
/// routes the same (unsharded) tokens.
double tp_replication(const RankShape& r) { return r.sp ? 1.0 : 1.0 / d(r.tp); }

/// Router probabilities (fp32) read and written by top-k and its backward.
double logits_bytes(const RankShape& r, int64_t experts) {
  return d(r.norm_tokens) * d(experts) * 8;
}

}  // namespace

void moe_forward(const Job& job, const RankShape& r, Builder& b) {
  const MoeSizes s = moe_sizes(job, r);
  const int64_t experts = s.experts, n1 = s.n1;
  const double h = s.h, routed_bytes = s.routed_bytes;
  // Without SP every TP rank routes the same tokens: the repeats are
  // hardware FLOPs, not model FLOPs.
  Op& router = b.gemm("moe_router", r.norm_tokens, experts, r.hidden, 1, tp_replication(r));
  router.saved_bytes = d(r.norm_tokens) * h * r.e;
  const double logits = d(r.norm_tokens) * d(experts);
  b.memory("moe_topk", logits * 8, kSoftmaxFlops * logits).saved_bytes = logits * 4;
  b.memory("moe_permute", d(r.norm_tokens) * h * r.e + routed_bytes, 0);
  b.collective("moe_dispatch", Dim::kEp, CollectiveKind::kAllToAll, routed_bytes);
  if (r.sp) {
    b.collective("moe_expert_gather", Dim::kTp, CollectiveKind::kAllGather,
                 s.expert_rows * h * r.e);
  }
  const double experts_here = d(s.local_experts);
  fp8_forward_casts(job, b, "moe_expert_fc1", s.expert_rows * h, experts_here * h * d(n1), false);
  b.grouped_gemm("moe_expert_fc1", s.rows_per_expert, n1, r.hidden, s.local_experts,
                 2 * s.expert_rows * d(n1) * h)
      .saved_bytes = s.expert_rows * h * r.e;
  activation_forward(job, r, b, "moe_expert", s.expert_rows, s.ffn);
  fp8_forward_casts(job, b, "moe_expert_fc2", s.expert_rows * d(s.ffn), experts_here * d(s.ffn) * h,
                    false);
  b.grouped_gemm("moe_expert_fc2", s.rows_per_expert, r.hidden, s.ffn, s.local_experts,
                 2 * s.expert_rows * d(s.ffn) * h)
      .saved_bytes = s.expert_rows * d(s.ffn) * r.e;
  b.collective("moe_expert_reduce", Dim::kTp,
               r.sp ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce,
               s.expert_rows * h * r.e);
  b.collective("moe_combine", Dim::kEp, CollectiveKind::kAllToAll, routed_bytes);
  b.memory("moe_unpermute", routed_bytes + d(r.norm_tokens) * h * r.e, 2 * s.routed_rows * h)
      .saved_bytes = routed_bytes;
  if (s.shared_ffn > 0) {
    sp_gather_forward(job, r, b, "moe_shared_gather");
    dense_mlp_forward(job, r, b, "moe_shared", s.shared_ffn);
  }
}

void moe_backward(const Job& job, const RankShape& r, Builder& b) {
  const MoeSizes s = moe_sizes(job, r);
  const int64_t experts = s.experts, n1 = s.n1;
  const double h = s.h, routed_bytes = s.routed_bytes;
  const int64_t rows = s.rows_per_expert, local = s.local_experts;
  if (s.shared_ffn > 0) dense_mlp_backward(job, r, b, "moe_shared", s.shared_ffn);
  b.memory("moe_unpermute_bwd", 2 * routed_bytes + d(r.norm_tokens) * h * r.e,
           2 * s.routed_rows * h);
  b.collective("moe_combine_bwd", Dim::kEp, CollectiveKind::kAllToAll, routed_bytes);
  if (r.sp) {
    b.collective("moe_expert_reduce_bwd", Dim::kTp, CollectiveKind::kAllGather,
                 s.expert_rows * h * r.e);
  }
  const double fc2_flops = 2 * s.expert_rows * d(s.ffn) * h;
  const double fc1_flops = 2 * s.expert_rows * d(n1) * h;
  fp8_grad_cast(job, b, "moe_expert_fc2", s.expert_rows * h);
  b.grouped_gemm("moe_expert_fc2_dgrad", rows, s.ffn, r.hidden, local, fc2_flops);
  b.set_role(OpRole::kWeightGrad);
  b.grouped_gemm("moe_expert_fc2_wgrad", s.ffn, r.hidden, rows, local, fc2_flops);
  b.set_role(OpRole::kInputGrad);
  activation_backward(job, r, b, "moe_expert", s.expert_rows, s.ffn);
  fp8_grad_cast(job, b, "moe_expert_fc1", s.expert_rows * d(n1));
  b.grouped_gemm("moe_expert_fc1_dgrad", rows, r.hidden, n1, local, fc1_flops);
  b.set_role(OpRole::kWeightGrad);
  b.grouped_gemm("moe_expert_fc1_wgrad", r.hidden, n1, rows, local, fc1_flops);
  b.set_role(OpRole::kInputGrad);
  b.collective("moe_expert_gather_bwd", Dim::kTp,
               r.sp ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce,
               s.expert_rows * h * r.e);
  b.collective("moe_dispatch_bwd", Dim::kEp, CollectiveKind::kAllToAll, routed_bytes);
  b.memory("moe_permute_bwd", d(r.norm_tokens) * h * r.e + routed_bytes, s.routed_rows * h);
  b.memory("moe_topk_bwd", logits_bytes(r, experts), kSoftmaxFlops * d(r.norm_tokens) * d(experts));
  b.gemm("moe_router_dgrad", r.norm_tokens, r.hidden, experts, 1, tp_replication(r));
  b.set_role(OpRole::kWeightGrad);
  b.gemm("moe_router_wgrad", r.hidden, experts, r.norm_tokens, 1, tp_replication(r));
  b.set_role(OpRole::kInputGrad);
}

}  // namespace podsim::strategies::ops
