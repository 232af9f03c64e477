// The attention core of a layer: flash or explicit scores, and the context-
// parallel algorithms (ring, Ulysses, all-gather) around it.
#include <algorithm>

#include "strategies/op_builder.h"

namespace podsim::strategies::ops {

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

}  // namespace podsim::strategies::ops
