// The mixture-of-experts block of a layer, as Megatron-Core runs it
// (megatron/core/transformer/moe: router.py, token_dispatcher.py,
// experts.py, shared_experts.py), under MoE parallel folding: attention's
// TP ranks each route their own tokens (sequence parallelism), tokens travel
// over the expert-parallel group, experts are split expert_tp ways.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "strategies/moe_imbalance.h"
#include "strategies/op_builder.h"

namespace podsim::strategies::ops {
namespace {

// Passes of the fused TE router kernels over the fp32 logits (score
// function, top-k, aux-loss scores: transformer_engine/pytorch/router.py),
// read or written, forward and backward. A count, not a calibration.
constexpr double kRouterPasses = 6;

struct MoeSizes {
  double tokens = 0;        ///< tokens this rank routes (T / tp)
  double routed_rows = 0;   ///< token copies it sends: tokens * top_k
  double load = 1;          ///< busiest rank's rows over the even share (moe_imbalance.h)
  double expert_rows = 0;   ///< rows through its experts at even load (x expert_tp gathered)
  double busiest_rows = 0;  ///< the same on the busiest rank: expert_rows * load
  int64_t local_experts = 0;
  int64_t rows_per_expert = 0;           ///< busiest rank, rounded up
  int64_t balanced_rows_per_expert = 0;  ///< even load, rounded up
  int64_t ffn = 0;                       ///< per expert, per expert-TP rank
  int64_t n1 = 0;                        ///< first expert GEMM's columns (gate + up for SwiGLU)
  int64_t shared_ffn = 0;                ///< shared experts' total ffn per TP rank
  double h = 0;
  double wire = 2;           ///< bytes of a dispatched element
  double routed_bytes = 0;   ///< hidden states this rank sends (permuted copies)
  int64_t gemm_streams = 0;  ///< software.moe.expert_gemm_streams
};

MoeSizes moe_sizes(const Job& job, const RankShape& r) {
  const MoeShape& m = *job.model.moe;
  MoeSizes s;
  s.tokens = d(r.moe_tokens);
  s.routed_rows = s.tokens * d(m.top_k);
  s.load = busiest_rank_load(m, r.moe_tokens, r.ep);
  s.local_experts = m.experts / r.ep;
  s.expert_rows = s.routed_rows * d(r.etp);
  s.busiest_rows = s.expert_rows * s.load;
  const double locals = d(s.local_experts);
  s.rows_per_expert =
      std::max<int64_t>(1, static_cast<int64_t>(std::ceil(s.busiest_rows / locals)));
  s.balanced_rows_per_expert =
      std::max<int64_t>(1, static_cast<int64_t>(std::ceil(s.expert_rows / locals)));
  s.ffn = m.ffn_hidden / r.etp;
  s.shared_ffn = m.shared_experts * m.ffn_hidden / r.tp;
  s.n1 = mlp_in_columns(job, s.ffn);
  s.h = d(r.hidden);
  s.wire = job.options.moe.dispatcher == MoeDispatcher::kFusedAllToAll
               ? sim::bytes_per_element(job.options.moe.dispatch_format)
               : r.e;
  s.routed_bytes = s.routed_rows * s.h * s.wire;
  s.gemm_streams = job.software.moe.expert_gemm_streams;
  return s;
}

bool fused(const Job& job) { return job.options.moe.dispatcher == MoeDispatcher::kFusedAllToAll; }

/// The dispatch or combine all-to-all over EP. The busiest rank receives
/// `load` times the even share; it paces the layer, so the transfer is
/// priced at that size.
Op* token_all_to_all(const Job& job, const MoeSizes& s, Builder& b, const char* name,
                     double element_bytes) {
  const double bytes = s.routed_rows * s.h * element_bytes * s.load;
  Op* op = b.collective(name, Dim::kEp, CollectiveKind::kAllToAll, bytes);
  if (op == nullptr) return nullptr;
  op->imbalance = s.load;
  op->collective.dispatch = {s.tokens, s.h * element_bytes, job.model.moe->top_k, fused(job)};
  if (job.options.moe.dispatch_sms > 0) op->collective.kernel_sms = job.options.moe.dispatch_sms;
  return op;
}

/// A grouped GEMM over the local experts, priced at the busiest rank's rows
/// per expert; `flops_per_row` at even load gives its model FLOPs.
Op& expert_gemm(Builder& b, const MoeSizes& s, std::string name, bool rows_are_m, int64_t a,
                int64_t c, double flops_per_row) {
  const double flops = flops_per_row * s.busiest_rows;
  Op& op = rows_are_m
               ? b.grouped_gemm(std::move(name), s.rows_per_expert, a, c, s.local_experts, flops)
               : b.grouped_gemm(std::move(name), a, c, s.rows_per_expert, s.local_experts, flops);
  op.imbalance = s.load;
  // One GEMM per local expert on the framework's streams (TE GroupedLinear's
  // multi-stream cuBLAS loop): each is issued by the host and quantised into
  // tiles and waves of its own.
  if (s.gemm_streams > 0 && s.local_experts > 1) {
    op.kernels = static_cast<int32_t>(s.local_experts);
    op.concurrent_gemms = static_cast<int32_t>(std::min(s.gemm_streams, s.local_experts));
  }
  op.balanced_gemm = op.gemm;
  (rows_are_m ? op.balanced_gemm.m : op.balanced_gemm.k) = s.balanced_rows_per_expert;
  // Model FLOPs are those of even routing: the busiest rank's excess is
  // waiting work, not model work.
  if (op.model_flops > 0) op.model_flops = flops_per_row * s.expert_rows;
  return op;
}

/// Memory-bound work over the busiest rank's expert rows.
Op& expert_memory(Builder& b, const MoeSizes& s, std::string name, double bytes_per_row,
                  double flops_per_row) {
  Op& op =
      b.memory(std::move(name), bytes_per_row * s.busiest_rows, flops_per_row * s.busiest_rows);
  op.imbalance = s.load;
  return op;
}

void router_forward(const Job& job, const RankShape& r, const MoeSizes& s, Builder& b) {
  const MoeShape& m = *job.model.moe;
  b.set_moe_part(MoePart::kRouter);
  Op& gate = b.gemm("moe_router", r.moe_tokens, m.experts, r.hidden);
  if (m.router_fp32) gate.format = sim::NumberFormat::kFp32;
  gate.saved_bytes = s.tokens * s.h * r.e;
  const double logits = s.tokens * d(m.experts);
  b.memory("moe_router_topk", kRouterPasses * logits * 4, kSoftmaxFlops * logits).saved_bytes =
      logits * 4;
  // Dropless routing: every rank learns how many tokens each expert gets
  // before the all-to-all (token_dispatcher.py preprocess).
  b.expert_collective("moe_token_counts", InWorkGroup::kExpertTpEp, CollectiveKind::kAllGather,
                      d(m.experts) * 8 * d(r.etp * r.ep));
  if (!fused(job)) {
    // The alltoall dispatcher's preprocess around that gather: the routing
    // map's column sums and cast, the per-rank input splits, the local
    // experts' slice and three reductions of it (7 kernels), then four
    // device-to-host copies of the split sizes (tokens per expert, input,
    // output and expert-TP splits; _maybe_dtoh_and_synchronize).
    constexpr int32_t kSplitSizeKernels = 7 + 4;
    b.memory("moe_split_sizes", s.tokens * d(m.experts) + 6 * d(m.experts * r.ep * r.etp) * 8, 0,
             kSplitSizeKernels);
  }
}

void router_backward(const Job& job, const RankShape& r, const MoeSizes& s, Builder& b) {
  const MoeShape& m = *job.model.moe;
  b.set_moe_part(MoePart::kRouter);
  const double logits = s.tokens * d(m.experts);
  b.memory("moe_router_topk_bwd", kRouterPasses * logits * 4, kSoftmaxFlops * logits);
  Op& dgrad = b.gemm("moe_router_dgrad", r.moe_tokens, r.hidden, m.experts);
  if (m.router_fp32) dgrad.format = sim::NumberFormat::kFp32;
  b.set_role(OpRole::kWeightGrad);
  Op& wgrad = b.gemm("moe_router_wgrad", r.hidden, m.experts, r.moe_tokens);
  if (m.router_fp32) wgrad.format = sim::NumberFormat::kFp32;
  b.set_role(OpRole::kInputGrad);
}

}  // namespace

void moe_forward(const Job& job, const RankShape& r, Builder& b) {
  const MoeSizes s = moe_sizes(job, r);
  const double h = s.h, e = r.e;
  const bool fused_dispatch = fused(job);
  router_forward(job, r, s, b);
  b.set_moe_part(MoePart::kPermute);
  // Global permute: T rows read, T*k copies written (+ fp32 probabilities);
  // fused into DeepEP's dispatch kernel.
  if (!fused_dispatch) b.memory("moe_permute", s.tokens * h * e + s.routed_rows * (h * e + 4), 0);
  const bool overlap_shared = job.options.moe.shared_expert_overlap && s.shared_ffn > 0;
  if (overlap_shared) {
    b.set_moe_part(MoePart::kShared);
    fp8_sequence_parallel_amax(job, r, b, "moe_shared_fc1_input");
    sp_gather_forward(job, r, b, "moe_shared_gather");
  }
  b.set_moe_part(MoePart::kDispatch);
  // Dropless: the host reads the split sizes before it issues the
  // all-to-all (or, without EP, the experts); drop-and-pad is not modelled.
  if (job.software.moe.dispatch_host_sync) b.host_sync_next();
  Op* dispatch = token_all_to_all(job, s, b, "moe_dispatch", s.wire);
  if (overlap_shared) {
    // Shared fc1 on its own stream beside the dispatch (shared_experts.py).
    b.set_moe_part(MoePart::kShared);
    pair(dispatch, b.size());
    b.gemm("moe_shared_fc1", r.tokens, mlp_in_columns(job, s.shared_ffn), r.hidden).saved_bytes =
        column_input_saved(r);
    activation_forward(job, r, b, "moe_shared", d(r.tokens), s.shared_ffn);
  }
  b.set_moe_part(MoePart::kDispatch);
  // The alltoall dispatcher sends the routing probabilities with an
  // all-to-all of their own (dispatch_all_to_all); DeepEP carries them in
  // its dispatch kernel.
  if (!fused_dispatch) {
    b.collective("moe_dispatch_probs", Dim::kEp, CollectiveKind::kAllToAll,
                 s.routed_rows * 4 * s.load);
  }
  b.expert_collective("moe_expert_tp_gather", InWorkGroup::kExpertTp, CollectiveKind::kAllGather,
                      s.expert_rows * s.load * h * e);
  b.set_moe_part(MoePart::kPermute);
  if (s.local_experts > 1) expert_memory(b, s, "moe_sort_by_expert", 2 * h * e, 0);
  b.set_moe_part(MoePart::kExperts);
  const double experts_here = d(s.local_experts);
  fp8_forward_casts(job, b, "moe_expert_fc1", s.busiest_rows * h, experts_here * h * d(s.n1),
                    false);
  expert_gemm(b, s, "moe_expert_fc1", true, s.n1, r.hidden, 2 * d(s.n1) * h).saved_bytes =
      s.busiest_rows * h * e;
  // The activation scales by the routing probabilities (MCore >= 0.13).
  const double act_out = d(s.ffn);
  if (job.model.mlp == MlpKind::kSwiglu) {
    if (Op* clamp = clamp_forward(job, r, b, "moe_expert_clamp", s.busiest_rows * act_out)) {
      clamp->imbalance = s.load;
    }
    expert_memory(b, s, "moe_expert_swiglu", 3 * act_out * e, kSwigluFlops * act_out).saved_bytes =
        2 * act_out * e * s.busiest_rows;
  } else {
    expert_memory(b, s, "moe_expert_gelu", 2 * act_out * e, kGeluFlops * act_out).saved_bytes =
        act_out * e * s.busiest_rows;
  }
  fp8_forward_casts(job, b, "moe_expert_fc2", s.busiest_rows * d(s.ffn),
                    experts_here * d(s.ffn) * h, false);
  expert_gemm(b, s, "moe_expert_fc2", true, r.hidden, s.ffn, 2 * d(s.ffn) * h).saved_bytes =
      s.busiest_rows * d(s.ffn) * e;
  b.set_moe_part(MoePart::kPermute);
  if (s.local_experts > 1) expert_memory(b, s, "moe_unsort", 2 * h * e, 0);
  b.set_moe_part(MoePart::kDispatch);
  b.expert_collective("moe_expert_tp_reduce", InWorkGroup::kExpertTp,
                      CollectiveKind::kReduceScatter, s.expert_rows * s.load * h * e);
  Op* combine = token_all_to_all(job, s, b, "moe_combine", e);
  if (overlap_shared) {
    b.set_moe_part(MoePart::kShared);
    pair(combine, b.size());
    const int32_t fc2 = b.size();
    b.gemm("moe_shared_fc2", r.tokens, r.hidden, s.shared_ffn).saved_bytes =
        d(r.tokens) * d(s.shared_ffn) * e;
    tp_reduce_forward(job, r, b, "moe_shared_reduce", fc2, full_hidden_bytes(r));
  }
  b.set_moe_part(MoePart::kPermute);
  // Weighted sum of each token's k expert outputs.
  b.memory("moe_unpermute", s.routed_rows * h * e + s.tokens * h * e, 2 * s.routed_rows * h)
      .saved_bytes = s.routed_rows * h * e;
  if (!r.sp && r.tp > 1) {
    // Each TP rank routed its share of the tokens; the block's output is
    // whole again on every rank.
    b.set_moe_part(MoePart::kDispatch);
    b.collective("moe_output_gather", Dim::kTp, CollectiveKind::kAllGather, full_hidden_bytes(r));
  }
  if (s.shared_ffn > 0 && !overlap_shared) {
    b.set_moe_part(MoePart::kShared);
    fp8_sequence_parallel_amax(job, r, b, "moe_shared_fc1_input");
    sp_gather_forward(job, r, b, "moe_shared_gather");
    dense_mlp_forward(job, r, b, "moe_shared", s.shared_ffn);
  }
  b.set_moe_part(MoePart::kNone);
}

void moe_backward(const Job& job, const RankShape& r, Builder& b) {
  const MoeSizes s = moe_sizes(job, r);
  const double h = s.h, e = r.e;
  const bool fused_dispatch = fused(job);
  if (s.shared_ffn > 0) {
    b.set_moe_part(MoePart::kShared);
    dense_mlp_backward(job, r, b, "moe_shared", s.shared_ffn);
  }
  if (!r.sp && r.tp > 1) {
    b.set_moe_part(MoePart::kDispatch);
    b.collective("moe_input_grad_gather", Dim::kTp, CollectiveKind::kAllGather,
                 full_hidden_bytes(r));
  }
  b.set_moe_part(MoePart::kPermute);
  b.memory("moe_unpermute_bwd", 2 * s.routed_rows * h * e + s.tokens * h * e,
           2 * s.routed_rows * h);
  b.set_moe_part(MoePart::kDispatch);
  token_all_to_all(job, s, b, "moe_combine_bwd", s.wire);
  b.expert_collective("moe_expert_tp_reduce_bwd", InWorkGroup::kExpertTp,
                      CollectiveKind::kAllGather, s.expert_rows * s.load * h * e);
  b.set_moe_part(MoePart::kPermute);
  if (s.local_experts > 1) expert_memory(b, s, "moe_unsort_bwd", 2 * h * e, 0);
  b.set_moe_part(MoePart::kExperts);
  const double fc2_per_row = 2 * d(s.ffn) * h;
  const double fc1_per_row = 2 * d(s.n1) * h;
  fp8_grad_cast(job, b, "moe_expert_fc2", s.busiest_rows * h);
  expert_gemm(b, s, "moe_expert_fc2_dgrad", true, s.ffn, r.hidden, fc2_per_row);
  b.set_role(OpRole::kWeightGrad);
  expert_gemm(b, s, "moe_expert_fc2_wgrad", false, s.ffn, r.hidden, fc2_per_row);
  b.set_role(OpRole::kInputGrad);
  const double act_out = d(s.ffn);
  if (job.model.mlp == MlpKind::kSwiglu) {
    expert_memory(b, s, "moe_expert_swiglu_bwd", 5 * act_out * e,
                  kBackwardFlopsFactor * kSwigluFlops * act_out);
    if (Op* clamp = clamp_backward(job, r, b, "moe_expert_clamp_bwd", s.busiest_rows * act_out)) {
      clamp->imbalance = s.load;
    }
  } else {
    expert_memory(b, s, "moe_expert_gelu_bwd", 3 * act_out * e,
                  kBackwardFlopsFactor * kGeluFlops * act_out);
  }
  fp8_grad_cast(job, b, "moe_expert_fc1", s.busiest_rows * d(s.n1));
  expert_gemm(b, s, "moe_expert_fc1_dgrad", true, r.hidden, s.n1, fc1_per_row);
  b.set_role(OpRole::kWeightGrad);
  expert_gemm(b, s, "moe_expert_fc1_wgrad", false, r.hidden, s.n1, fc1_per_row);
  b.set_role(OpRole::kInputGrad);
  b.set_moe_part(MoePart::kPermute);
  if (s.local_experts > 1) expert_memory(b, s, "moe_sort_by_expert_bwd", 2 * h * e, 0);
  b.set_moe_part(MoePart::kDispatch);
  b.expert_collective("moe_expert_tp_gather_bwd", InWorkGroup::kExpertTp,
                      CollectiveKind::kReduceScatter, s.expert_rows * s.load * h * e);
  token_all_to_all(job, s, b, "moe_dispatch_bwd", e);
  if (!fused_dispatch) {
    b.collective("moe_dispatch_probs_bwd", Dim::kEp, CollectiveKind::kAllToAll,
                 s.routed_rows * 4 * s.load);
  }
  b.set_moe_part(MoePart::kPermute);
  if (!fused_dispatch) {
    b.memory("moe_permute_bwd", s.tokens * h * e + s.routed_rows * h * e, s.routed_rows * h);
  }
  router_backward(job, r, s, b);
  b.set_moe_part(MoePart::kNone);
}

}  // namespace podsim::strategies::ops
