// The attention of a layer: the projections in front of the core (QKV, or
// multi-head latent attention's low-rank projections), the core -- flash or
// explicit scores, full or sliding-window -- and the context-parallel
// algorithms (ring, Ulysses, all-gather) around it.
#include <algorithm>

#include "strategies/op_builder.h"

namespace podsim::strategies::ops {
namespace {

/// Share of the QKV product that is model work: when tp > kv_heads each rank
/// computes a whole replicated KV head, of which only kv_heads/tp is its own.
double qkv_model_fraction(const Job& job, const RankShape& r) {
  const double own_kv = d(kv_heads(job.model)) / d(r.tp);
  return (d(r.heads) + 2 * own_kv) / d(r.heads + 2 * r.kv_heads);
}

bool is_mla(const Job& job) { return job.model.attention.kind == AttentionKind::kMla; }

/// Output columns of MLA's query projection on one rank: heads x (nope+rope).
int64_t mla_q_columns(const Job& job, const RankShape& r) {
  return r.heads * job.model.attention.mla.qk_head_dim();
}
/// Output columns of MLA's key/value up-projection: heads x (nope + v).
int64_t mla_kv_columns(const Job& job, const RankShape& r) {
  const MlaShape& l = job.model.attention.mla;
  return r.heads * (l.qk_nope_head_dim + l.v_head_dim);
}

/// MLA's latent path of one projection: a down-projection replicated on the
/// TP ranks (Megatron builds it 'duplicated'), an RMSNorm of the latent and
/// the head-split up-projection.
void mla_latent_forward(const RankShape& r, Builder& b, const std::string& name, int64_t rank,
                        int64_t up_columns, int64_t down_extra, bool saves_input) {
  const double replicated = 1.0 / d(r.tp);
  Op& down = b.gemm(name + "_down", r.tokens, rank + down_extra, r.hidden, 1, replicated);
  if (saves_input) down.saved_bytes = column_input_saved(r);
  const double latent = d(r.tokens) * d(rank);
  b.memory(name + "_latent_norm", 2 * latent * r.e, kRmsNormFlops * latent).saved_bytes =
      latent * r.e;
  b.gemm(name + "_up", r.tokens, up_columns, rank).saved_bytes = latent * r.e;
}

void mla_latent_backward(const RankShape& r, Builder& b, const std::string& name, int64_t rank,
                         int64_t up_columns, int64_t down_extra) {
  const double replicated = 1.0 / d(r.tp);
  const double latent = d(r.tokens) * d(rank);
  b.gemm(name + "_up_dgrad", r.tokens, rank, up_columns);
  // The head-split up-projection leaves partial latent gradients on the TP
  // ranks: summed before the (replicated) norm and down-projection.
  Op* reduce =
      b.collective(name + "_up_dgrad_reduce", Dim::kTp, CollectiveKind::kAllReduce, latent * r.e);
  pair(reduce, b.size());
  b.set_role(OpRole::kWeightGrad);
  b.gemm(name + "_up_wgrad", rank, up_columns, r.tokens);
  b.set_role(OpRole::kInputGrad);
  b.memory(name + "_latent_norm_bwd", 5 * latent * r.e,
           kBackwardFlopsFactor * kRmsNormFlops * latent);
  b.gemm(name + "_down_dgrad", r.tokens, r.hidden, rank + down_extra, 1, replicated);
  b.set_role(OpRole::kWeightGrad);
  b.gemm(name + "_down_wgrad", r.hidden, rank + down_extra, r.tokens, 1, replicated);
  b.set_role(OpRole::kInputGrad);
}

/// Key and value elements per token as the attention call receives them,
/// which is what context parallelism moves: torchtitan's repeat_kv copies
/// grouped K/V to every query head before SDPA, and its context parallelism
/// rotates SDPA's inputs.
double cp_kv_width(const Job& job, const AttnDims& a) {
  const bool expanded = job.software.elementwise.repeat_kv && a.kv_heads < a.heads;
  return expanded ? 2.0 * d(a.heads) * d(a.head_dim) : a.kv_width;
}

/// Bytes per element of the dK/dV a ring passes back in the backward.
double ring_dkv_bytes(const Job& job, const RankShape& r) {
  return job.software.cp_merge == CpMerge::kEagerFp32 ? 4.0 : r.e;
}

constexpr double kFp32Bytes = 4.0;

// The ring's merge of its steps' partial results (software.attention.cp_merge).
// Over the ranks of a load-balanced ring, half the remote steps use every
// query against half the keys (the whole output merged) and half use the
// last half of the queries (half merged): 3/4 of the output per remote step.
// Element counts: `out` the rank's attention output (or its gradient), `kv`
// the K and V it sends per step; `e` and `f` the 16-bit and fp32 element
// bytes; `remote` the steps on other ranks' K/V.
struct RingMergeSizes {
  double e, f, out, kv, remote;
};
RingMergeSizes ring_merge_sizes(const Job& job, const RankShape& r, const AttnDims& a,
                                double out_width) {
  return {r.e, kFp32Bytes, d(r.tokens) * out_width, d(r.tokens) * cp_kv_width(job, a), d(r.cp - 1)};
}

/// Forward: the merge after the steps, the K/V copies for the sends.
void ring_merge_forward(const Job& job, const RankShape& r, const AttnDims& a, Builder& b) {
  const auto [e, f, out, kv, remote] = ring_merge_sizes(job, r, a, a.o_width);
  double bytes = 0;
  int32_t kernels = 0;
  switch (job.software.cp_merge) {
    case CpMerge::kFused16Bit:
      // Zero the output, then one fused out += block x exp(lse_i - lse) per
      // step (read block and out, write out); a step against half the keys
      // first copies that half contiguous.
      bytes = out * (e + 3 * e * (1 + 0.75 * remote)) + kv * remote * 0.5 * e;
      kernels = static_cast<int32_t>(2 + 2 * (r.cp - 1));
      break;
    case CpMerge::kEagerFp32:
      // Upcast each block (e + f); merge eagerly: out - block, x sigmoid,
      // out - that (three fp32 passes, 8 f); a half-query step clones the
      // whole running output and copies the half back (3 f); the result cast
      // back (f + e); K and V concatenated for every send (2 e).
      bytes = out * (2 * (e + f) + remote * (0.75 * (e + 9 * f) + 1.5 * f)) + kv * remote * 2 * e;
      kernels = static_cast<int32_t>(2 + 11 * (r.cp - 1));
      break;
  }
  b.memory("cp_merge", bytes, 0, kernels).attention_core = true;
}

/// Backward: dQ and dK/dV accumulated over the steps.
void ring_merge_backward(const Job& job, const RankShape& r, const AttnDims& a, Builder& b) {
  const auto [e, f, out, kv, remote] = ring_merge_sizes(job, r, a, a.q_width);
  double bytes = 0;
  int32_t kernels = 0;
  switch (job.software.cp_merge) {
    case CpMerge::kFused16Bit:
      // dq += dq_i and dkv += dkv_i in 16 bits (read both, write one), and
      // the contiguous half-K/V copies of the forward again.
      bytes = (out + kv) * 3 * e * (1 + 0.75 * remote) + kv * remote * 0.5 * e;
      kernels = static_cast<int32_t>(3 * r.cp);
      break;
    case CpMerge::kEagerFp32:
      // fp32 accumulators zeroed (f), each step's 16-bit gradient added
      // (e + 2 f), a half step cloning the whole accumulator first (2 f,
      // then half the add), dK/dV concatenated in fp32 for each send (2 f),
      // K/V concatenated for each send (2 e), the results cast back (f + e).
      bytes = out * (f + (e + 2 * f) + remote * (0.75 * (e + 2 * f) + f) + (f + e)) +
              kv * (f + (e + 2 * f) + 2 * f + remote * (2 * e + f + 0.75 * (e + 2 * f) + 2 * f) +
                    (f + e));
      kernels = static_cast<int32_t>(8 + 6 * (r.cp - 1));
      break;
  }
  b.memory("cp_merge_bwd", bytes, 0, kernels).attention_core = true;
}

}  // namespace

AttnDims attention_dims(const Job& job, const RankShape& r, const LayerKind& kind) {
  AttnDims a;
  a.heads = r.heads;
  a.window = kind.sliding ? job.model.attention.sliding_window : 0;
  if (is_mla(job)) {
    // K and V are materialised per head (the shared RoPE key broadcast).
    const MlaShape& l = job.model.attention.mla;
    a.kv_heads = r.heads;
    a.head_dim = (l.qk_head_dim() + l.v_head_dim) / 2;
    a.q_width = d(r.heads * l.qk_head_dim());
    a.kv_width = d(r.heads * (l.qk_head_dim() + l.v_head_dim));
    a.o_width = d(r.heads * l.v_head_dim);
    return a;
  }
  a.kv_heads = r.kv_heads;
  a.head_dim = r.head_dim;
  a.q_width = d(r.heads * r.head_dim);
  a.kv_width = d(2 * r.kv_heads * r.head_dim);
  a.o_width = a.q_width;
  return a;
}

void attention_projections_forward(const Job& job, const RankShape& r, Builder& b) {
  if (!is_mla(job)) {
    const int64_t qkv_out = (r.heads + 2 * r.kv_heads) * r.head_dim;
    fp8_forward_casts(job, b, "qkv", d(r.norm_tokens) * d(r.hidden), d(r.hidden) * d(qkv_out),
                      true);
    fp8_sequence_parallel_amax(job, r, b, "qkv_input");
    sp_gather_forward(job, r, b, "attn_input_gather");
    b.gemm("qkv", r.tokens, qkv_out, r.hidden, 1, qkv_model_fraction(job, r)).saved_bytes =
        column_input_saved(r);
    rope_forward(job, r, b);
    return;
  }
  sp_gather_forward(job, r, b, "attn_input_gather");
  const MlaShape& l = job.model.attention.mla;
  if (l.q_lora_rank > 0) {
    mla_latent_forward(r, b, "mla_q", l.q_lora_rank, mla_q_columns(job, r), 0, true);
  } else {
    b.gemm("mla_q_proj", r.tokens, mla_q_columns(job, r), r.hidden).saved_bytes =
        column_input_saved(r);
  }
  // The key/value down-projection also yields the shared RoPE key; it reads
  // the same (saved) input as the query path.
  mla_latent_forward(r, b, "mla_kv", l.kv_lora_rank, mla_kv_columns(job, r), l.qk_rope_head_dim,
                     false);
  const double elems = d(r.tokens) * d((r.heads + 1) * l.qk_rope_head_dim);
  b.memory("rope", 2 * elems * r.e, kRopeFlops * elems);
}

void attention_projections_backward(const Job& job, const RankShape& r, Builder& b) {
  if (!is_mla(job)) {
    const int64_t qkv_out = (r.heads + 2 * r.kv_heads) * r.head_dim;
    rope_backward(job, r, b);
    fp8_grad_cast(job, b, "qkv", d(r.tokens) * d(qkv_out));
    column_linear_backward(job, r, b, "qkv", r.hidden, qkv_out, qkv_model_fraction(job, r));
    return;
  }
  const MlaShape& l = job.model.attention.mla;
  const double elems = d(r.tokens) * d((r.heads + 1) * l.qk_rope_head_dim);
  b.memory("rope_bwd", 2 * elems * r.e, kRopeFlops * elems);
  if (r.sp) {
    // The replicated down-projections' weight gradients need the gathered
    // input, stored sharded (sequence parallelism).
    const OpRole saved = b.role();
    b.set_role(OpRole::kWeightGrad);
    b.collective("mla_input_regather", Dim::kTp, CollectiveKind::kAllGather, full_hidden_bytes(r));
    b.set_role(saved);
  }
  mla_latent_backward(r, b, "mla_kv", l.kv_lora_rank, mla_kv_columns(job, r), l.qk_rope_head_dim);
  if (l.q_lora_rank > 0) {
    mla_latent_backward(r, b, "mla_q", l.q_lora_rank, mla_q_columns(job, r), 0);
  } else {
    column_linear_backward(job, r, b, "mla_q_proj", r.hidden, mla_q_columns(job, r));
  }
}

void attention_core_forward(const Job& job, const RankShape& r, const AttnDims& a, Builder& b) {
  const double e = r.e;
  const int64_t d_h = a.head_dim;
  const double q_bytes = d(r.tokens) * a.q_width * e;
  const double kv_bytes = d(r.tokens) * a.kv_width * e;
  const double lse_bytes = d(r.b) * d(a.heads) * d(r.s_local) * 4.0;  // fp32 stats
  const bool overlap_cp = job.options.overlap_cp;
  if (!r.flash) {
    // Explicit scores (Megatron's fused scale-mask-softmax path): the full
    // s*s products run; model FLOPs count the causal half.
    const int64_t bh = r.b * a.heads;
    const double scores = d(bh) * d(r.s) * d(r.s);
    Op& qk = b.gemm("attn_scores", r.s, r.s, d_h, bh, 0.5);
    qk.saved_bytes = d(r.tokens) * d((a.heads + a.kv_heads) * d_h) * e;  // Q, K
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
    av.saved_bytes = d(r.tokens) * d(a.kv_heads * d_h) * e;  // V
    av.saved_core_bytes = r.dropout ? scores * e : 0.0;      // dropout output
    av.attention_core = true;
    return;
  }
  if (r.cp == 1) {
    Op& at = b.attention("attn_core", a.heads, a.kv_heads, r.s, r.s, true, false, d_h, a.window);
    at.saved_bytes = q_bytes + kv_bytes;
    at.saved_core_bytes = lse_bytes;
    return;
  }
  switch (job.plan.context) {
    case ContextAlgorithm::kRing: {
      // 2*cp chunks, rank i holds chunks i and 2cp-1-i: the local step is a
      // causal block of s/cp, every remote step a full block of half the
      // queries (s/2cp) against s/cp keys -- the same work on every rank.
      const double step_bytes = d(r.b) * d(r.s_local) * cp_kv_width(job, a) * e;
      Op* x1 = b.collective("cp_kv_exchange", Dim::kCp, CollectiveKind::kSendRecv, step_bytes);
      if (x1 != nullptr) x1->attention_core = true;
      const int32_t local_index = b.size();
      pair(x1, overlap_cp ? local_index : -1);
      Op& local = b.attention("attn_core_local", a.heads, a.kv_heads, r.s_local, r.s_local, true,
                              false, d_h);
      local.saved_bytes = q_bytes + kv_bytes;
      local.saved_core_bytes = lse_bytes;
      if (r.cp > 2) {
        Op* xn = b.collective("cp_kv_exchange", Dim::kCp, CollectiveKind::kSendRecv, step_bytes);
        xn->count = r.cp - 2;
        xn->attention_core = true;
        pair(xn, overlap_cp ? b.size() : -1);
        Op& remote = b.attention("attn_core_remote", a.heads, a.kv_heads, r.s_local / 2, r.s_local,
                                 false, false, d_h);
        remote.count = r.cp - 2;
      }
      b.attention("attn_core_remote", a.heads, a.kv_heads, r.s_local / 2, r.s_local, false, false,
                  d_h);
      ring_merge_forward(job, r, a, b);
      return;
    }
    case ContextAlgorithm::kUlysses: {
      Op* a1 = b.collective("cp_a2a_qkv", Dim::kCp, CollectiveKind::kAllToAll, q_bytes + kv_bytes);
      if (a1 != nullptr) a1->attention_core = true;
      const int64_t heads = a.heads / r.cp;
      const int64_t kvh = std::max<int64_t>(1, a.kv_heads / r.cp);
      Op& at = b.attention("attn_core", heads, kvh, r.s, r.s, true, false, d_h);
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
                            d(r.b) * d(r.s) * a.kv_width * e);
      if (ag != nullptr) ag->attention_core = true;
      const int64_t n = r.s / (2 * r.cp);
      Op& first = b.attention("attn_core_first", a.heads, a.kv_heads, n, n, true, false, d_h);
      first.saved_bytes = q_bytes + kv_bytes;  // Q and the local K/V; K/V re-gathered later
      first.saved_core_bytes = lse_bytes;
      b.attention("attn_core_last", a.heads, a.kv_heads, n, r.s, true, false, d_h);
      return;
    }
  }
}

void attention_core_backward(const Job& job, const RankShape& r, const AttnDims& a, Builder& b) {
  const double e = r.e;
  const int64_t d_h = a.head_dim;
  const bool overlap_cp = job.options.overlap_cp;
  if (!r.flash) {
    const int64_t bh = r.b * a.heads;
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
    b.attention("attn_core_bwd", a.heads, a.kv_heads, r.s, r.s, true, true, d_h, a.window);
    return;
  }
  const double q_bytes = d(r.tokens) * a.q_width * e;
  const double kv_bytes = d(r.tokens) * a.kv_width * e;
  switch (job.plan.context) {
    case ContextAlgorithm::kRing: {
      // Each step passes K/V on and the partial dK/dV back (in the
      // accumulators' format).
      const double step_bytes =
          d(r.b) * d(r.s_local) * cp_kv_width(job, a) * (e + ring_dkv_bytes(job, r));
      Op* x1 = b.collective("cp_kv_dkv_exchange", Dim::kCp, CollectiveKind::kSendRecv, step_bytes);
      pair(x1, overlap_cp ? b.size() : -1);
      b.attention("attn_core_local_bwd", a.heads, a.kv_heads, r.s_local, r.s_local, true, true,
                  d_h);
      if (r.cp > 2) {
        Op* xn =
            b.collective("cp_kv_dkv_exchange", Dim::kCp, CollectiveKind::kSendRecv, step_bytes);
        xn->count = r.cp - 2;
        pair(xn, overlap_cp ? b.size() : -1);
        b.attention("attn_core_remote_bwd", a.heads, a.kv_heads, r.s_local / 2, r.s_local, false,
                    true, d_h)
            .count = r.cp - 2;
      }
      b.attention("attn_core_remote_bwd", a.heads, a.kv_heads, r.s_local / 2, r.s_local, false,
                  true, d_h);
      ring_merge_backward(job, r, a, b);
      return;
    }
    case ContextAlgorithm::kUlysses: {
      b.collective("cp_a2a_dout", Dim::kCp, CollectiveKind::kAllToAll, q_bytes);
      b.attention("attn_core_bwd", a.heads / r.cp, std::max<int64_t>(1, a.kv_heads / r.cp), r.s,
                  r.s, true, true, d_h);
      b.collective("cp_a2a_dqkv", Dim::kCp, CollectiveKind::kAllToAll, q_bytes + kv_bytes);
      return;
    }
    case ContextAlgorithm::kAllGather: {
      const double gathered = d(r.b) * d(r.s) * a.kv_width * e;
      b.collective("cp_kv_all_gather", Dim::kCp, CollectiveKind::kAllGather, gathered);
      const int64_t n = r.s / (2 * r.cp);
      b.attention("attn_core_first_bwd", a.heads, a.kv_heads, n, n, true, true, d_h);
      b.attention("attn_core_last_bwd", a.heads, a.kv_heads, n, r.s, true, true, d_h);
      b.collective("cp_dkv_reduce_scatter", Dim::kCp, CollectiveKind::kReduceScatter, gathered);
      return;
    }
  }
}

}  // namespace podsim::strategies::ops
