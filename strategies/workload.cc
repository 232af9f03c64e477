#include "strategies/workload.h"

#include <algorithm>
#include <utility>

namespace podsim::strategies {
namespace {

// Arithmetic per element of the memory-bound kernels. These ops are bound by
// memory bandwidth on every GPU podsim models (their FLOPs per byte are far
// below any GPU's ratio), so the counts are rough operation tallies, not
// calibrated values: LayerNorm mean+variance+scale+shift ~7, RMSNorm ~4,
// tanh-GeLU ~8, SiLU*up ~5, softmax (max, sub, exp, sum, div) ~5, dropout 2,
// residual add 1; backward passes about 1.5-2x.
constexpr double kLayerNormFlops = 7, kRmsNormFlops = 4;
constexpr double kGeluFlops = 8, kSwigluFlops = 5, kSoftmaxFlops = 5;
constexpr double kDropoutFlops = 2, kResidualFlops = 1, kRopeFlops = 3;
constexpr double kBackwardFlopsFactor = 2;
// Adam per parameter: two moment updates (7), bias corrections (2), sqrt,
// eps, divide (3), update with weight decay (3). Momentum SGD: 4.
constexpr double kAdamFlops = 15, kSgdFlops = 4;
// Flash attention's backward recomputes the scores: 5 matrix products of the
// score shape against the forward's 2.
constexpr double kFlashBackwardFactor = 2.5;

double d(int64_t v) { return static_cast<double>(v); }

/// Builds op lists; knows the rank shape and the role of what it adds.
class Builder {
 public:
  Builder(const RankShape& r, OpRole role) : r_(r), role_(role) {}

  int32_t size() const { return static_cast<int32_t>(ops_.size()); }
  std::vector<Op> take() { return std::move(ops_); }
  std::vector<Op>& ops() { return ops_; }
  void set_role(OpRole role) { role_ = role; }
  OpRole role() const { return role_; }

  /// A matrix product; `model_fraction` of its FLOPs count as model FLOPs
  /// (0.5 for the explicit score/AV products of causal attention).
  Op& gemm(std::string name, int64_t m, int64_t n, int64_t k, int64_t batch = 1,
           double model_fraction = 1.0) {
    Op& op = add(std::move(name), OpKind::kGemm);
    op.format = r_.gemm_format;
    op.gemm = {m, n, k, batch};
    op.flops = 2.0 * d(m) * d(n) * d(k) * d(batch);
    op.model_flops = model_fraction * op.flops;
    fix_model_flops(op);
    return op;
  }
  /// A grouped GEMM (`batch` experts) whose shape rounds an average row
  /// count up; its FLOPs are the exact `flops` of the balanced routing.
  Op& grouped_gemm(std::string name, int64_t m, int64_t n, int64_t k, int64_t batch, double flops) {
    Op& op = gemm(std::move(name), m, n, k, batch);
    op.flops = flops;
    op.model_flops = flops;
    fix_model_flops(op);
    return op;
  }
  Op& attention(std::string name, int64_t heads, int64_t kv_heads, int64_t q_len, int64_t kv_len,
                bool causal, bool backward) {
    Op& op = add(std::move(name), OpKind::kAttention);
    op.format = r_.act_format;
    op.attention = {r_.b, heads, kv_heads, q_len, kv_len, r_.head_dim, causal, backward, true};
    const double forward =
        4.0 * d(r_.b) * d(heads) * d(r_.head_dim) * op.attention.score_elements();
    op.flops = backward ? kFlashBackwardFactor * forward : forward;
    op.model_flops = backward ? 2.0 * forward : forward;
    op.attention_core = true;
    fix_model_flops(op);
    return op;
  }
  Op& memory(std::string name, double bytes, double flops) {
    Op& op = add(std::move(name), OpKind::kMemoryBound);
    op.format = r_.act_format;
    op.memory = {bytes, flops};
    op.flops = flops;
    return op;
  }
  /// A collective; returns nullptr (adds nothing) when the group has one rank.
  Op* collective(std::string name, Dim dim, CollectiveKind kind, double bytes,
                 int32_t overlap_op = -1) {
    if (group_size(dim) <= 1) return nullptr;
    Op& op = add(std::move(name), OpKind::kCollective);
    op.format = r_.act_format;
    op.collective = {dim, kind, bytes, overlap_op};
    return &op;
  }
  int64_t group_size(Dim dim) const {
    switch (dim) {
      case Dim::kTp:
        return r_.tp;
      case Dim::kCp:
        return r_.cp;
      case Dim::kEp:
        return r_.ep;
      case Dim::kDp:
      case Dim::kPp:
        return 1;  // not used inside works: the schedule's comm tasks carry those
    }
    return 1;
  }

 private:
  Op& add(std::string name, OpKind kind) {
    Op op;
    op.name = std::move(name);
    op.kind = kind;
    op.role = role_;
    ops_.push_back(std::move(op));
    return ops_.back();
  }
  void fix_model_flops(Op& op) const {
    if (role_ == OpRole::kRecompute || role_ == OpRole::kOptimizer) op.model_flops = 0;
  }

  const RankShape& r_;
  OpRole role_;
  std::vector<Op> ops_;
};

double norm_flops(const Job& job) {
  return job.model.norm == NormKind::kLayerNorm ? kLayerNormFlops : kRmsNormFlops;
}

/// Pairs a collective (if one was added) with the compute op at `target`
/// (-1: no overlap). Call before adding the next op: it invalidates pointers.
void pair(Op* collective, int32_t target) {
  if (collective != nullptr) collective->collective.overlap_op = target;
}

// ---- Attention -------------------------------------------------------------

void attention_core_forward(const Job& job, const RankShape& r, Builder& b) {
  const double e = r.e;
  const int64_t d_h = r.head_dim;
  const double q_bytes = d(r.tokens) * d(r.heads * d_h) * e;
  const double kv_bytes = d(r.tokens) * d(2 * r.kv_heads * d_h) * e;
  const double lse_bytes = d(r.b) * d(r.heads) * d(r.s_local) * 4.0;  // fp32 stats
  const bool overlap_cp = job.options.overlap_cp;
  if (!r.flash) {
    // Explicit scores (Megatron's fused scale-mask-softmax path): the full
    // s*s products run; model FLOPs count the causal half.
    const int64_t bh = r.b * r.heads;
    const double scores = d(bh) * d(r.s) * d(r.s);
    Op& qk = b.gemm("attn_scores", r.s, r.s, d_h, bh, 0.5);
    qk.saved_bytes = d(r.tokens) * d((r.heads + r.kv_heads) * d_h) * e;  // Q, K
    qk.attention_core = true;
    Op& sm = b.memory("attn_softmax", 2 * scores * e, kSoftmaxFlops * scores);
    sm.saved_core_bytes = scores * e;  // softmax output
    sm.attention_core = true;
    if (r.dropout) {
      Op& dr = b.memory("attn_dropout", scores * (2 * e + 1), kDropoutFlops * scores);
      dr.saved_core_bytes = scores;  // 1-byte mask
      dr.attention_core = true;
    }
    Op& av = b.gemm("attn_av", r.s, d_h, r.s, bh, 0.5);
    av.saved_bytes = d(r.tokens) * d(r.kv_heads * d_h) * e;  // V
    av.saved_core_bytes = r.dropout ? scores * e : 0.0;      // dropout output
    av.attention_core = true;
    return;
  }
  if (r.cp == 1) {
    Op& at = b.attention("attn_core", r.heads, r.kv_heads, r.s, r.s, true, false);
    at.saved_bytes = q_bytes + kv_bytes;
    at.saved_core_bytes = lse_bytes;
    return;
  }
  switch (job.plan.context) {
    case ContextAlgorithm::kRing: {
      // 2*cp chunks, rank i holds chunks i and 2cp-1-i: the local step is a
      // causal block of s/cp, every remote step a full block of half the
      // queries (s/2cp) against s/cp keys -- the same work on every rank.
      const double step_bytes = d(r.b) * d(r.s_local) * d(2 * r.kv_heads * d_h) * e;
      Op* x1 = b.collective("cp_kv_exchange", Dim::kCp, CollectiveKind::kSendRecv, step_bytes);
      if (x1 != nullptr) x1->attention_core = true;
      const int32_t local_index = b.size();
      pair(x1, overlap_cp ? local_index : -1);
      Op& local =
          b.attention("attn_core_local", r.heads, r.kv_heads, r.s_local, r.s_local, true, false);
      local.saved_bytes = q_bytes + kv_bytes;
      local.saved_core_bytes = lse_bytes;
      if (r.cp > 2) {
        Op* xn = b.collective("cp_kv_exchange", Dim::kCp, CollectiveKind::kSendRecv, step_bytes);
        xn->count = r.cp - 2;
        xn->attention_core = true;
        pair(xn, overlap_cp ? b.size() : -1);
        Op& remote = b.attention("attn_core_remote", r.heads, r.kv_heads, r.s_local / 2, r.s_local,
                                 false, false);
        remote.count = r.cp - 2;
      }
      b.attention("attn_core_remote", r.heads, r.kv_heads, r.s_local / 2, r.s_local, false, false);
      return;
    }
    case ContextAlgorithm::kUlysses: {
      Op* a1 = b.collective("cp_a2a_qkv", Dim::kCp, CollectiveKind::kAllToAll, q_bytes + kv_bytes);
      if (a1 != nullptr) a1->attention_core = true;
      const int64_t heads = r.heads / r.cp;
      const int64_t kvh = std::max<int64_t>(1, r.kv_heads / r.cp);
      Op& at = b.attention("attn_core", heads, kvh, r.s, r.s, true, false);
      at.saved_bytes = d(r.b) * d(r.s) * d((heads + 2 * kvh) * d_h) * e;
      at.saved_core_bytes = d(r.b) * d(heads) * d(r.s) * 4.0;
      Op* a2 = b.collective("cp_a2a_out", Dim::kCp, CollectiveKind::kAllToAll, q_bytes);
      if (a2 != nullptr) a2->attention_core = true;
      return;
    }
    case ContextAlgorithm::kAllGather: {
      // Llama 3: gather K/V of the whole sequence, then the two local query
      // chunks (load-balanced) attend causally. Shapes are those of CP rank
      // 0 (chunks 0 and 2cp-1); other ranks do the same total work.
      Op* ag = b.collective("cp_kv_all_gather", Dim::kCp, CollectiveKind::kAllGather,
                            d(r.b) * d(r.s) * d(2 * r.kv_heads * d_h) * e);
      if (ag != nullptr) ag->attention_core = true;
      const int64_t n = r.s / (2 * r.cp);
      Op& a = b.attention("attn_core_first", r.heads, r.kv_heads, n, n, true, false);
      a.saved_bytes = q_bytes + kv_bytes;  // Q and the local K/V; K/V re-gathered later
      a.saved_core_bytes = lse_bytes;
      b.attention("attn_core_last", r.heads, r.kv_heads, n, r.s, true, false);
      return;
    }
  }
}

void attention_core_backward(const Job& job, const RankShape& r, Builder& b) {
  const double e = r.e;
  const int64_t d_h = r.head_dim;
  const bool overlap_cp = job.options.overlap_cp;
  if (!r.flash) {
    const int64_t bh = r.b * r.heads;
    const double scores = d(bh) * d(r.s) * d(r.s);
    b.gemm("attn_av_dgrad_p", r.s, r.s, d_h, bh, 0.5).attention_core = true;  // dP = dO V^T
    b.gemm("attn_av_dgrad_v", r.s, d_h, r.s, bh, 0.5).attention_core = true;  // dV = P^T dO
    if (r.dropout) {
      b.memory("attn_dropout_bwd", scores * (2 * e + 1), kDropoutFlops * scores).attention_core =
          true;
    }
    b.memory("attn_softmax_bwd", 3 * scores * e, kBackwardFlopsFactor * kSoftmaxFlops * scores)
        .attention_core = true;
    b.gemm("attn_scores_dgrad_q", r.s, d_h, r.s, bh, 0.5).attention_core = true;  // dQ = dS K
    b.gemm("attn_scores_dgrad_k", r.s, d_h, r.s, bh, 0.5).attention_core = true;  // dK = dS^T Q
    return;
  }
  if (r.cp == 1) {
    b.attention("attn_core_bwd", r.heads, r.kv_heads, r.s, r.s, true, true);
    return;
  }
  const double q_bytes = d(r.tokens) * d(r.heads * d_h) * e;
  const double kv_bytes = d(r.tokens) * d(2 * r.kv_heads * d_h) * e;
  switch (job.plan.context) {
    case ContextAlgorithm::kRing: {
      // Each step passes K/V on and the partial dK/dV back: twice the bytes.
      const double step_bytes = 2.0 * d(r.b) * d(r.s_local) * d(2 * r.kv_heads * d_h) * e;
      Op* x1 = b.collective("cp_kv_dkv_exchange", Dim::kCp, CollectiveKind::kSendRecv, step_bytes);
      pair(x1, overlap_cp ? b.size() : -1);
      b.attention("attn_core_local_bwd", r.heads, r.kv_heads, r.s_local, r.s_local, true, true);
      if (r.cp > 2) {
        Op* xn =
            b.collective("cp_kv_dkv_exchange", Dim::kCp, CollectiveKind::kSendRecv, step_bytes);
        xn->count = r.cp - 2;
        pair(xn, overlap_cp ? b.size() : -1);
        b.attention("attn_core_remote_bwd", r.heads, r.kv_heads, r.s_local / 2, r.s_local, false,
                    true)
            .count = r.cp - 2;
      }
      b.attention("attn_core_remote_bwd", r.heads, r.kv_heads, r.s_local / 2, r.s_local, false,
                  true);
      return;
    }
    case ContextAlgorithm::kUlysses: {
      b.collective("cp_a2a_dout", Dim::kCp, CollectiveKind::kAllToAll, q_bytes);
      b.attention("attn_core_bwd", r.heads / r.cp, std::max<int64_t>(1, r.kv_heads / r.cp), r.s,
                  r.s, true, true);
      b.collective("cp_a2a_dqkv", Dim::kCp, CollectiveKind::kAllToAll, q_bytes + kv_bytes);
      return;
    }
    case ContextAlgorithm::kAllGather: {
      const double gathered = d(r.b) * d(r.s) * d(2 * r.kv_heads * d_h) * e;
      b.collective("cp_kv_all_gather", Dim::kCp, CollectiveKind::kAllGather, gathered);
      const int64_t n = r.s / (2 * r.cp);
      b.attention("attn_core_first_bwd", r.heads, r.kv_heads, n, n, true, true);
      b.attention("attn_core_last_bwd", r.heads, r.kv_heads, n, r.s, true, true);
      b.collective("cp_dkv_reduce_scatter", Dim::kCp, CollectiveKind::kReduceScatter, gathered);
      return;
    }
  }
}

// ---- Layer pieces ------------------------------------------------------------

/// Norm forward; saves its input.
void norm_forward(const Job& job, const RankShape& r, Builder& b, const char* name) {
  const double elems = d(r.norm_tokens) * d(r.hidden);
  b.memory(name, 2 * elems * r.e, norm_flops(job) * elems).saved_bytes = elems * r.e;
}
/// Norm backward, with the residual-gradient accumulation.
void norm_backward(const Job& job, const RankShape& r, Builder& b, const char* name) {
  const double elems = d(r.norm_tokens) * d(r.hidden);
  b.memory(name, 5 * elems * r.e, kBackwardFlopsFactor * norm_flops(job) * elems);
}
/// (bias +) dropout + residual add after a block; saves the dropout mask.
void residual_forward(const RankShape& r, Builder& b, const char* name) {
  const double elems = d(r.norm_tokens) * d(r.hidden);
  const double flops = (kResidualFlops + (r.dropout ? kDropoutFlops : 0.0)) * elems;
  Op& op = b.memory(name, 3 * elems * r.e + (r.dropout ? elems : 0.0), flops);
  op.saved_bytes = r.dropout ? elems : 0.0;
}
void residual_backward(const RankShape& r, Builder& b, const char* name) {
  // Without dropout the gradient passes to both branches unchanged: no kernel.
  if (!r.dropout) return;
  const double elems = d(r.norm_tokens) * d(r.hidden);
  b.memory(name, elems * (2 * r.e + 1), kDropoutFlops * elems);
}

/// Input of a column-parallel linear: gathered over TP with SP.
double column_input_saved(const RankShape& r) {
  return d(r.sp ? r.norm_tokens : r.tokens) * d(r.hidden) * r.e;
}
double full_hidden_bytes(const RankShape& r) { return d(r.tokens) * d(r.hidden) * r.e; }

/// The all-gather before a column-parallel linear (SP), with TP overlap.
void sp_gather_forward(const Job& job, const RankShape& r, Builder& b, const char* name) {
  if (!r.sp) return;
  Op* ag = b.collective(name, Dim::kTp, CollectiveKind::kAllGather, full_hidden_bytes(r));
  pair(ag, job.options.overlap_tp ? b.size() : -1);
}
/// The reduction after a row-parallel linear at index `gemm_index`.
void tp_reduce_forward(const Job& job, const RankShape& r, Builder& b, const char* name,
                       int32_t gemm_index, double bytes) {
  Op* op = b.collective(name, Dim::kTp,
                        r.sp ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce, bytes);
  pair(op, job.options.overlap_tp ? gemm_index : -1);
}

/// Backward of a column-parallel linear Y = X W (X: tokens x in, W: in x out):
/// [re-gather X (SP) || dgrad] [reduce dX || wgrad], as Megatron overlaps them.
void column_linear_backward(const RankShape& r, Builder& b, const std::string& name, int64_t in,
                            int64_t out, double model_fraction = 1.0) {
  const double dx_bytes = d(r.tokens) * d(in) * r.e;
  Op* regather = nullptr;
  if (r.sp) {
    const OpRole saved = b.role();
    b.set_role(OpRole::kWeightGrad);  // only the weight gradient needs the input
    regather =
        b.collective(name + "_input_regather", Dim::kTp, CollectiveKind::kAllGather, dx_bytes);
    b.set_role(saved);
  }
  pair(regather, b.size());
  b.gemm(name + "_dgrad", r.tokens, in, out, 1, model_fraction);
  Op* reduce =
      b.collective(name + "_dgrad_reduce", Dim::kTp,
                   r.sp ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce, dx_bytes);
  pair(reduce, b.size());
  b.set_role(OpRole::kWeightGrad);
  b.gemm(name + "_wgrad", in, out, r.tokens, 1, model_fraction);
  b.set_role(OpRole::kInputGrad);
}
/// Backward of a row-parallel linear Y = X W: gather dY (SP), dgrad, wgrad.
void row_linear_backward(const RankShape& r, Builder& b, const std::string& name, int64_t in,
                         int64_t out) {
  if (r.sp) {
    b.collective(name + "_dout_gather", Dim::kTp, CollectiveKind::kAllGather,
                 d(r.tokens) * d(out) * r.e);
  }
  b.gemm(name + "_dgrad", r.tokens, in, out);
  b.set_role(OpRole::kWeightGrad);
  b.gemm(name + "_wgrad", in, out, r.tokens);
  b.set_role(OpRole::kInputGrad);
}

int64_t mlp_in_columns(const Job& job, int64_t ffn) {
  return job.model.mlp == MlpKind::kSwiglu ? 2 * ffn : ffn;
}

/// Activation forward on rows x ffn; saves its input(s).
void activation_forward(const Job& job, const RankShape& r, Builder& b, const std::string& name,
                        double rows, int64_t ffn) {
  const double out = rows * d(ffn);
  if (job.model.mlp == MlpKind::kSwiglu) {
    b.memory(name + "_swiglu", 3 * out * r.e, kSwigluFlops * out).saved_bytes = 2 * out * r.e;
  } else {
    b.memory(name + "_bias_gelu", 2 * out * r.e, kGeluFlops * out).saved_bytes = out * r.e;
  }
}
void activation_backward(const Job& job, const RankShape& r, Builder& b, const std::string& name,
                         double rows, int64_t ffn) {
  const double out = rows * d(ffn);
  if (job.model.mlp == MlpKind::kSwiglu) {
    b.memory(name + "_swiglu_bwd", 5 * out * r.e, kBackwardFlopsFactor * kSwigluFlops * out);
  } else {
    b.memory(name + "_gelu_bwd", 3 * out * r.e, kBackwardFlopsFactor * kGeluFlops * out);
  }
}

void dense_mlp_forward(const Job& job, const RankShape& r, Builder& b, const std::string& name,
                       int64_t ffn) {
  const int64_t n1 = mlp_in_columns(job, ffn);
  b.gemm(name + "_fc1", r.tokens, n1, r.hidden).saved_bytes = column_input_saved(r);
  activation_forward(job, r, b, name, d(r.tokens), ffn);
  const int32_t fc2 = b.size();
  b.gemm(name + "_fc2", r.tokens, r.hidden, ffn).saved_bytes = d(r.tokens) * d(ffn) * r.e;
  tp_reduce_forward(job, r, b, (name + "_reduce").c_str(), fc2, full_hidden_bytes(r));
}
void dense_mlp_backward(const Job& job, const RankShape& r, Builder& b, const std::string& name,
                        int64_t ffn) {
  row_linear_backward(r, b, name + "_fc2", ffn, r.hidden);
  activation_backward(job, r, b, name, d(r.tokens), ffn);
  column_linear_backward(r, b, name + "_fc1", r.hidden, mlp_in_columns(job, ffn));
}

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
  b.grouped_gemm("moe_expert_fc1", s.rows_per_expert, n1, r.hidden, s.local_experts,
                 2 * s.expert_rows * d(n1) * h)
      .saved_bytes = s.expert_rows * h * r.e;
  activation_forward(job, r, b, "moe_expert", s.expert_rows, s.ffn);
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
  b.grouped_gemm("moe_expert_fc2_dgrad", rows, s.ffn, r.hidden, local, fc2_flops);
  b.set_role(OpRole::kWeightGrad);
  b.grouped_gemm("moe_expert_fc2_wgrad", s.ffn, r.hidden, rows, local, fc2_flops);
  b.set_role(OpRole::kInputGrad);
  activation_backward(job, r, b, "moe_expert", s.expert_rows, s.ffn);
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

/// Share of the QKV product that is model work: when tp > kv_heads each rank
/// computes a whole replicated KV head, of which only kv_heads/tp is its own.
double qkv_model_fraction(const Job& job, const RankShape& r) {
  const double own_kv = d(kv_heads(job.model)) / d(r.tp);
  return (d(r.heads) + 2 * own_kv) / d(r.heads + 2 * r.kv_heads);
}

void layer_forward(const Job& job, const RankShape& r, Builder& b) {
  const int64_t d_h = r.head_dim;
  const int64_t qkv_out = (r.heads + 2 * r.kv_heads) * d_h;
  norm_forward(job, r, b, "attn_norm");
  sp_gather_forward(job, r, b, "attn_input_gather");
  b.gemm("qkv", r.tokens, qkv_out, r.hidden, 1, qkv_model_fraction(job, r)).saved_bytes =
      column_input_saved(r);
  if (!r.learned_positions) {
    const double elems = d(r.tokens) * d((r.heads + r.kv_heads) * d_h);
    b.memory("rope", 2 * elems * r.e, kRopeFlops * elems);
  }
  attention_core_forward(job, r, b);
  const int32_t out = b.size();
  b.gemm("attn_out", r.tokens, r.hidden, r.heads * d_h).saved_bytes =
      d(r.tokens) * d(r.heads * d_h) * r.e;
  tp_reduce_forward(job, r, b, "attn_reduce", out, full_hidden_bytes(r));
  residual_forward(r, b, "attn_residual");
  norm_forward(job, r, b, "mlp_norm");
  if (job.model.moe) {
    moe_forward(job, r, b);
  } else {
    sp_gather_forward(job, r, b, "mlp_input_gather");
    dense_mlp_forward(job, r, b, "mlp", r.ffn);
  }
  residual_forward(r, b, "mlp_residual");
}

void layer_backward(const Job& job, const RankShape& r, Builder& b) {
  const int64_t d_h = r.head_dim;
  const int64_t qkv_out = (r.heads + 2 * r.kv_heads) * d_h;
  residual_backward(r, b, "mlp_residual_bwd");
  if (job.model.moe) {
    moe_backward(job, r, b);
  } else {
    dense_mlp_backward(job, r, b, "mlp", r.ffn);
  }
  norm_backward(job, r, b, "mlp_norm_bwd");
  residual_backward(r, b, "attn_residual_bwd");
  row_linear_backward(r, b, "attn_out", r.heads * d_h, r.hidden);
  attention_core_backward(job, r, b);
  if (!r.learned_positions) {
    const double elems = d(r.tokens) * d((r.heads + r.kv_heads) * d_h);
    b.memory("rope_bwd", 2 * elems * r.e, kRopeFlops * elems);
  }
  column_linear_backward(r, b, "qkv", r.hidden, qkv_out, qkv_model_fraction(job, r));
  norm_backward(job, r, b, "attn_norm_bwd");
}

/// Keeps the ops `keep` accepts, remapping overlap targets (a collective whose
/// target is dropped no longer overlaps).
template <typename Keep>
std::vector<Op> filter_ops(const std::vector<Op>& ops, Keep keep) {
  std::vector<int32_t> index(ops.size(), -1);
  std::vector<Op> out;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (!keep(ops[i])) continue;
    index[i] = static_cast<int32_t>(out.size());
    out.push_back(ops[i]);
  }
  for (Op& op : out) {
    if (op.kind == OpKind::kCollective && op.collective.overlap_op >= 0) {
      op.collective.overlap_op = index[static_cast<size_t>(op.collective.overlap_op)];
    }
  }
  return out;
}

std::vector<Op> split_backward(std::vector<Op> ops, Pass pass) {
  if (pass == Pass::kBackward) return ops;
  const OpRole wanted = pass == Pass::kBackwardWeight ? OpRole::kWeightGrad : OpRole::kInputGrad;
  return filter_ops(ops, [wanted](const Op& op) { return op.role == wanted; });
}

std::vector<Op> as_recompute(std::vector<Op> ops) {
  for (Op& op : ops) {
    op.role = OpRole::kRecompute;
    op.model_flops = 0;
    op.saved_bytes = 0;
    op.saved_core_bytes = 0;
  }
  return ops;
}

}  // namespace

double AttentionShape::score_elements() const {
  const double q = d(q_len), kv = d(kv_len);
  if (!causal) return q * kv;
  return q <= kv ? q * kv - q * q / 2 : kv * kv / 2;
}

namespace {
double sum_ops(const Work& w, double (*f)(const Op&)) {
  double total = 0;
  for (const Segment& s : w.segments) {
    double seg = 0;
    for (const Op& op : s.ops) seg += d(op.count) * f(op);
    total += d(s.repeat) * seg;
  }
  return total;
}
}  // namespace

double Work::flops() const {
  return sum_ops(*this, [](const Op& op) { return op.is_compute() ? op.flops : 0.0; });
}
double Work::model_flops() const {
  return sum_ops(*this, [](const Op& op) { return op.model_flops; });
}
double Work::matmul_flops() const {
  return sum_ops(*this, [](const Op& op) {
    return op.kind == OpKind::kGemm || op.kind == OpKind::kAttention ? op.flops : 0.0;
  });
}
double Work::memory_bound_bytes() const {
  return sum_ops(
      *this, [](const Op& op) { return op.kind == OpKind::kMemoryBound ? op.memory.bytes : 0.0; });
}
double Work::collective_bytes(Dim dim) const {
  double total = 0;
  for (const Segment& s : segments) {
    for (const Op& op : s.ops) {
      if (op.kind == OpKind::kCollective && op.collective.dim == dim) {
        total += d(s.repeat) * d(op.count) * op.collective.bytes;
      }
    }
  }
  return total;
}

RankShape rank_shape(const Job& job) {
  const ModelShape& m = job.model;
  const ParallelPlan& p = job.plan;
  RankShape r;
  r.tp = p.tp;
  r.cp = p.cp;
  r.ep = p.ep;
  r.b = job.training.micro_batch;
  r.s = job.training.seq_len;
  r.s_local = r.s / p.cp;
  r.tokens = r.b * r.s_local;
  r.sp = p.sequence_parallel && p.tp > 1;
  r.norm_tokens = r.sp ? r.tokens / p.tp : r.tokens;
  r.hidden = m.hidden;
  r.heads = m.heads / p.tp;
  r.kv_heads = std::max<int64_t>(1, kv_heads(m) / p.tp);
  r.head_dim = head_dim(m);
  r.ffn = m.ffn_hidden / p.tp;
  r.vocab = (m.vocab + p.tp - 1) / p.tp;
  r.e = activation_element_bytes(job);
  r.gemm_format = job.training.precision;
  r.act_format = job.training.precision == sim::NumberFormat::kFp32 ? sim::NumberFormat::kFp32
                                                                    : sim::NumberFormat::kBf16;
  r.flash = job.options.flash_attention;
  r.dropout = uses_dropout(m);
  r.biases = uses_biases(m);
  r.learned_positions = learned_positions(m);
  return r;
}

std::vector<Op> layer_ops(const Job& job, Pass pass) {
  const RankShape r = rank_shape(job);
  if (pass == Pass::kForward || pass == Pass::kRecompute) {
    Builder b(r, OpRole::kForward);
    layer_forward(job, r, b);
    std::vector<Op> ops = b.take();
    if (pass == Pass::kForward) return ops;
    switch (job.plan.recompute.mode) {
      case RecomputeMode::kNone:
        return {};
      case RecomputeMode::kSelective:
        return as_recompute(filter_ops(ops, [](const Op& op) { return op.attention_core; }));
      case RecomputeMode::kFull:
      case RecomputeMode::kEvery:
        return as_recompute(std::move(ops));
    }
    return {};
  }
  Builder b(r, OpRole::kInputGrad);
  layer_backward(job, r, b);
  return split_backward(b.take(), pass);
}

std::vector<Op> embedding_ops(const Job& job, Pass pass) {
  const RankShape r = rank_shape(job);
  const double elems = d(r.norm_tokens) * d(r.hidden);
  const double full = full_hidden_bytes(r);
  if (pass == Pass::kRecompute) return {};
  if (pass == Pass::kForward) {
    Builder b(r, OpRole::kForward);
    // Vocab-parallel lookup: each TP rank fills the rows of its vocabulary
    // shard, the reduction assembles them.
    b.memory("embed_lookup", 2 * full, 0);
    b.collective("embed_reduce", Dim::kTp,
                 r.sp ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce, full);
    if (r.learned_positions) b.memory("embed_positions", 3 * elems * r.e, elems);
    if (r.dropout) {
      b.memory("embed_dropout", elems * (2 * r.e + 1), kDropoutFlops * elems).saved_bytes = elems;
    }
    return b.take();
  }
  Builder b(r, OpRole::kInputGrad);
  if (r.dropout) b.memory("embed_dropout_bwd", elems * (2 * r.e + 1), kDropoutFlops * elems);
  if (r.sp) b.collective("embed_grad_gather", Dim::kTp, CollectiveKind::kAllGather, full);
  b.set_role(OpRole::kWeightGrad);
  const double g = grad_element_bytes(job);
  if (r.learned_positions) {
    b.memory("embed_positions_wgrad", elems * r.e + 2 * d(r.s_local) * d(r.hidden) * g, elems);
  }
  // Scatter-add of the token gradients into the table rows (read-modify-write).
  b.memory("embed_wgrad", full + 2 * d(r.tokens) * d(r.hidden) * g, d(r.tokens) * d(r.hidden));
  return split_backward(b.take(), pass);
}

std::vector<Op> head_ops(const Job& job, Pass pass) {
  const RankShape r = rank_shape(job);
  const double logits = d(r.tokens) * d(r.vocab);
  if (pass == Pass::kRecompute) return {};
  if (pass == Pass::kForward) {
    Builder b(r, OpRole::kForward);
    norm_forward(job, r, b, "final_norm");
    sp_gather_forward(job, r, b, "head_input_gather");
    b.gemm("logits", r.tokens, r.vocab, r.hidden).saved_bytes = column_input_saved(r);
    // Vocab-parallel cross-entropy in fp32: the fp32 softmax is kept for the
    // backward pass (Megatron, torchtitan upcast the logits).
    b.memory("cross_entropy", logits * (r.e + 8), kSoftmaxFlops * logits).saved_bytes = logits * 4;
    Op* stats =
        b.collective("cross_entropy_stats", Dim::kTp, CollectiveKind::kAllReduce, d(r.tokens) * 4);
    if (stats != nullptr) stats->count = 3;  // max, sum of exp, target logit
    return b.take();
  }
  Builder b(r, OpRole::kInputGrad);
  b.memory("cross_entropy_bwd", logits * (4 + r.e), 2 * logits);
  column_linear_backward(r, b, "logits", r.hidden, r.vocab);
  norm_backward(job, r, b, "final_norm_bwd");
  return split_backward(b.take(), pass);
}

std::vector<Op> optimizer_ops(const Job& job, double params) {
  const RankShape r = rank_shape(job);
  Builder b(r, OpRole::kOptimizer);
  const double g = grad_element_bytes(job);
  const bool mixed = job.training.precision != sim::NumberFormat::kFp32;
  const double copy = mixed ? weight_element_bytes(job) : 0.0;  // new bf16 weights
  b.memory("grad_norm", params * g, 2 * params);
  if (job.training.optimizer == Optimizer::kAdam) {
    // read grad, fp32 weights, m, v; write fp32 weights, m, v (+ bf16 copy)
    b.memory("adam_step", params * (g + 4 * 3 + 4 * 3 + copy), kAdamFlops * params);
  } else {
    // momentum SGD: read grad, weights, momentum; write weights, momentum
    b.memory("sgd_step", params * (g + 4 * 2 + 4 * 2 + copy), kSgdFlops * params);
  }
  return b.take();
}

Work make_work(const Job& job, Pass pass, int64_t layers, bool embedding, bool head) {
  Work w;
  const bool forward = pass == Pass::kForward || pass == Pass::kRecompute;
  const char* pass_name = pass == Pass::kForward          ? "forward"
                          : pass == Pass::kBackward       ? "backward"
                          : pass == Pass::kBackwardInput  ? "backward_input"
                          : pass == Pass::kBackwardWeight ? "backward_weight"
                                                          : "recompute";
  w.name = std::string(pass_name) + " " + std::to_string(layers) + " layers" +
           (embedding ? " +embedding" : "") + (head ? " +head" : "");
  auto add = [&w](std::string name, int64_t repeat, std::vector<Op> ops) {
    if (ops.empty() || repeat == 0) return;
    w.segments.push_back({std::move(name), repeat, std::move(ops)});
  };
  if (forward) {
    if (embedding) add("embedding", 1, embedding_ops(job, pass));
    add("layer", layers, layer_ops(job, pass));
    if (head) add("head", 1, head_ops(job, pass));
  } else {
    if (head) add("head", 1, head_ops(job, pass));
    add("layer", layers, layer_ops(job, pass));
    if (embedding) add("embedding", 1, embedding_ops(job, pass));
  }
  return w;
}

// ---- Parameters ---------------------------------------------------------------

ParamCount count_parameters(const ModelShape& m, int64_t seq_len) {
  ParamCount p;
  const double h = d(m.hidden);
  const double dh = d(head_dim(m));
  const double heads = d(m.heads), kv = d(kv_heads(m));
  const bool bias = uses_biases(m);
  const double mats = m.mlp == MlpKind::kSwiglu ? 3 : 2;
  const double n1_factor = m.mlp == MlpKind::kSwiglu ? 2 : 1;
  const double attn = h * (heads + 2 * kv) * dh + heads * dh * h;
  const double norm_weights = 2 * h;
  double layer_bias = bias ? (heads + 2 * kv) * dh + h + 2 * h /* LayerNorm betas */ : 0.0;
  double mlp = 0, mlp_active = 0, mlp_matmul = 0;
  if (m.moe) {
    const MoeShape& e = *m.moe;
    const double expert = mats * h * d(e.ffn_hidden);
    const double router = h * d(e.experts);
    mlp = d(e.experts + e.shared_experts) * expert + router;
    mlp_active = d(e.top_k + e.shared_experts) * expert + router;
    mlp_matmul = d(e.top_k + e.shared_experts) * expert + router;
    if (bias) layer_bias += d(e.experts + e.shared_experts) * (n1_factor * d(e.ffn_hidden) + h);
  } else {
    mlp = mlp_active = mlp_matmul = mats * h * d(m.ffn_hidden);
    if (bias) layer_bias += n1_factor * d(m.ffn_hidden) + h;
  }
  p.per_layer_matmul = attn + mlp_matmul;
  p.per_layer_biases = layer_bias;
  p.per_layer = attn + mlp + norm_weights + layer_bias;
  p.per_layer_active = attn + mlp_active + norm_weights + layer_bias;
  p.embedding = d(m.vocab) * h;
  p.positions = learned_positions(m) ? d(seq_len) * h : 0.0;
  p.final_norm = bias ? 2 * h : h;
  p.output = m.tied_embeddings ? 0.0 : d(m.vocab) * h;
  const double outer = p.embedding + p.positions + p.final_norm + p.output;
  p.total = d(m.layers) * p.per_layer + outer;
  p.active = d(m.layers) * p.per_layer_active + outer;
  p.biases = d(m.layers) * layer_bias + (bias ? h : 0.0);
  return p;
}

StageParams layer_parameters(const Job& job) {
  const RankShape r = rank_shape(job);
  const ModelShape& m = job.model;
  const double h = d(m.hidden);
  const double dh = d(r.head_dim);
  const double qkv_out = d(r.heads + 2 * r.kv_heads) * dh;
  const double mats = m.mlp == MlpKind::kSwiglu ? 3 : 2;
  const double n1_factor = m.mlp == MlpKind::kSwiglu ? 2 : 1;
  StageParams p;
  // Column-parallel weights and biases are sharded; row-parallel biases and
  // norms are replicated across TP.
  p.dense = h * qkv_out + d(r.heads) * dh * h + 2 * h;
  if (r.biases) p.dense += qkv_out + h + 2 * h;
  if (m.moe) {
    const MoeShape& e = *m.moe;
    const double ffn = d(e.ffn_hidden / r.tp);
    p.dense += h * d(e.experts) + d(e.shared_experts) * mats * h * ffn;
    p.expert = d(e.experts / r.ep) * mats * h * ffn;
    if (r.biases) {
      p.dense += d(e.shared_experts) * (n1_factor * ffn + h);
      p.expert += d(e.experts / r.ep) * (n1_factor * ffn + h);
    }
  } else {
    p.dense += mats * h * d(r.ffn);
    if (r.biases) p.dense += n1_factor * d(r.ffn) + h;
  }
  return p;
}

StageParams embedding_parameters(const Job& job) {
  const RankShape r = rank_shape(job);
  StageParams p;
  p.dense = d(r.vocab) * d(r.hidden) +
            (r.learned_positions ? d(job.training.seq_len) * d(r.hidden) : 0.0);
  return p;
}

StageParams head_parameters(const Job& job) {
  const RankShape r = rank_shape(job);
  StageParams p;
  p.dense = r.biases ? 2.0 * d(r.hidden) : d(r.hidden);
  // Tied embeddings share the table when it lives on the same stage; with
  // pp > 1 the last stage keeps its own copy (Megatron), kept in sync by an
  // all-reduce of the two copies' gradients.
  const bool shared = job.model.tied_embeddings && job.plan.pp == 1;
  if (!shared) p.dense += d(r.vocab) * d(r.hidden);
  return p;
}

StageParams stage_parameters(const Job& job, int64_t stage) {
  const StageParams layer = layer_parameters(job);
  StageParams p;
  for (const ChunkInfo& c : stage_chunks(job, stage)) {
    p.dense += d(c.layers()) * layer.dense;
    p.expert += d(c.layers()) * layer.expert;
    if (c.has_embedding) p.dense += embedding_parameters(job).dense;
    if (c.has_head) p.dense += head_parameters(job).dense;
  }
  return p;
}

// ---- FLOP conventions ----------------------------------------------------------

namespace {
/// The job with every model-sharding degree at 1 (whole model, one replica).
Job unsharded(const Job& job) {
  Job u = job;
  u.plan.tp = u.plan.cp = u.plan.ep = u.plan.pp = 1;
  u.plan.virtual_stages = 1;
  u.plan.sequence_parallel = false;
  return u;
}
double micro_batches_per_step(const Job& job) {
  return d(job.training.global_batch) / d(job.training.micro_batch);
}
}  // namespace

double model_flops_per_step(const Job& job) {
  const Job u = unsharded(job);
  const double per_micro = make_work(u, Pass::kForward, u.model.layers, true, true).model_flops() +
                           make_work(u, Pass::kBackward, u.model.layers, true, true).model_flops();
  return per_micro * micro_batches_per_step(job);
}

double hardware_flops_per_step(const Job& job) {
  // Every rank of a stage runs the same work; sum a representative per stage.
  const double ranks_per_stage = d(job.plan.dp * job.plan.tp * job.plan.cp);
  const double m = d(micro_batches(job));
  double total = 0;
  for (int64_t s = 0; s < job.plan.pp; ++s) {
    for (const ChunkInfo& c : stage_chunks(job, s)) {
      const auto work = [&](Pass p) {
        return make_work(job, p, c.layers(), c.has_embedding, c.has_head).matmul_flops();
      };
      total += m * (work(Pass::kForward) + work(Pass::kBackward) + work(Pass::kRecompute));
    }
  }
  return total * ranks_per_stage;
}

double flops_6n_convention(const Job& job, bool include_embeddings, bool causal_halved) {
  const ModelShape& m = job.model;
  const ParamCount p = count_parameters(m, job.training.seq_len);
  double n = m.moe ? p.active : p.total;
  if (!include_embeddings) n -= p.embedding + p.positions + p.output;
  const double tokens = d(job.training.global_batch) * d(job.training.seq_len);
  const double attention = 12.0 * d(m.layers) * d(m.heads * head_dim(m)) * d(job.training.seq_len) *
                           (causal_halved ? 0.5 : 1.0);
  return tokens * (6.0 * n + attention);
}

double flops_megatron_sc21(const Job& job) {
  const ModelShape& m = job.model;
  const double b = d(job.training.global_batch), s = d(job.training.seq_len);
  const double l = d(m.layers), h = d(m.hidden), v = d(m.vocab);
  return 96.0 * b * s * l * h * h * (1.0 + s / (6.0 * h) + v / (16.0 * l * h));
}

}  // namespace podsim::strategies
