// The pieces a transformer layer's op list is made of: tensor-parallel
// linears (with sequence parallelism) and the dense MLP (the element-wise
// pieces are in elementwise_ops.cc).
#include <string>

#include "strategies/op_builder.h"

namespace podsim::strategies::ops {

/// Input of a column-parallel linear: gathered over TP with SP.
double column_input_saved(const RankShape& r) {
  return d(r.sp ? r.norm_tokens : r.tokens) * d(r.hidden) * r.e;
}
double full_hidden_bytes(const RankShape& r) { return d(r.tokens) * d(r.hidden) * r.e; }

namespace {

/// How TE userbuffers runs a collective beside a GEMM: a ring exchange of
/// the GEMM's all-gathered operand, a reduce-scatter pipelined with the
/// GEMM's chunks, or an independent (bulk) collective beside it.
enum class UbMethod : uint8_t { kRingExchange, kPipeline, kBulk };

/// Whether the software overlaps this TP collective with its GEMM: the plan
/// asks for it, the software has an overlap, the collectives are sequence
/// parallelism's gathers and reductions (Megatron asserts --sequence-parallel
/// with --tp-comm-overlap; AsyncTP fuses all-gather + matmul and matmul +
/// reduce-scatter), and it lies in a transformer block, where TE's modules
/// (or torch.compile's micro-pipelined TP) run.
bool overlaps_tp(const Job& job, const RankShape& r, CodeRegion region) {
  return job.options.overlap_tp && job.software.tp_overlap != TpOverlap::kNone && r.sp &&
         region == CodeRegion::kBlock;
}

/// Whether the TP collective `op` (if any) in `region` overlaps its GEMM
/// (overlaps_tp); if it does, marks it as the software runs it: the SMs its
/// kernels hold and the chunks its GEMM is cut into.
/// TE userbuffers' defaults (TransformerEngine v1.11 pytorch/module/base.py
/// initialize_ub): ring_exchange (qkv/fc1 fprop, proj/fc2 dgrad) num_sm 1,
/// num_splits tp; pipeline (proj/fc2 fprop) num_sm 16, num_splits 4; bulk
/// (qkv/fc1 dgrad and wgrad) num_sm 16, the GEMM whole.
/// AsyncTP (torch/distributed/_symmetric_memory: fused_all_gather_matmul's
/// _pipelined_all_gather_and_consume, fused_matmul_reduce_scatter's
/// _pipelined_produce_and_all2all) copies the shards between symmetric-memory
/// buffers with copy engines (0 SMs) and runs one matmul per shard (tp
/// chunks); it fuses an all-gather on a matmul's rows and a reduce-scatter
/// of its output, not the bulk pairs (an input re-gathered for a weight
/// gradient gathers the contraction dimension), which stay NCCL's.
/// XLA's collective matmul on TPU (Wang et al., ASPLOS'23, "Overlap
/// Communication with Dependent Computation via Decomposition") turns an
/// all-gather feeding an einsum, or a reduce-scatter of its output, into
/// tp - 1 collective-permutes over ICI DMA, each beside the partial einsum of
/// one shard (tp chunks); the bulk pairs are not its patterns.
/// The software's TpOverlapPatterns switch the pipelined patterns off one by
/// one (Megatron-Core tp_comm_overlap_ag / _rs; XLA's decompose flags).
bool by_tp_overlap(const Job& job, const RankShape& r, Op* op, UbMethod method, CodeRegion region) {
  if (!overlaps_tp(job, r, region)) return false;
  const TpOverlapPatterns& patterns = job.software.tp_overlap_patterns;
  if (method == UbMethod::kRingExchange && !patterns.all_gather) return false;
  if (method == UbMethod::kPipeline && !patterns.reduce_scatter) return false;
  if (op == nullptr) return true;
  const auto tp = static_cast<int32_t>(r.tp);
  switch (job.software.tp_overlap) {
    case TpOverlap::kTeUserbuffers:
      op->collective.kernel_sms = method == UbMethod::kRingExchange ? 1 : 16;
      op->collective.gemm_chunks = method == UbMethod::kRingExchange ? tp
                                   : method == UbMethod::kPipeline   ? 4
                                                                     : 1;
      break;
    case TpOverlap::kAsyncTp:
    case TpOverlap::kXlaCollectiveMatmul:
      if (method == UbMethod::kBulk) break;
      op->collective.kernel_sms = 0;
      op->collective.gemm_chunks = tp;
      break;
    case TpOverlap::kNone:  // no overlap (overlaps_tp)
      break;
  }
  return true;
}

}  // namespace

/// The all-gather before a column-parallel linear (SP), with TP overlap.
void sp_gather_forward(const Job& job, const RankShape& r, Builder& b, const char* name,
                       CodeRegion region) {
  if (!r.sp) return;
  Op* ag = b.collective(name, Dim::kTp, CollectiveKind::kAllGather, full_hidden_bytes(r));
  pair(ag, by_tp_overlap(job, r, ag, UbMethod::kRingExchange, region) ? b.size() : -1);
}
/// The reduction after a row-parallel linear at index `gemm_index`.
void tp_reduce_forward(const Job& job, const RankShape& r, Builder& b, const char* name,
                       int32_t gemm_index, double bytes) {
  Op* op = b.collective(name, Dim::kTp,
                        r.sp ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce, bytes);
  pair(op, by_tp_overlap(job, r, op, UbMethod::kPipeline, CodeRegion::kBlock) ? gemm_index : -1);
}

/// Backward of a column-parallel linear Y = X W (X: tokens x in, W: in x out):
/// [re-gather X (SP) || dgrad] [reduce dX || wgrad], as Megatron overlaps them.
void column_linear_backward(const Job& job, const RankShape& r, Builder& b, const std::string& name,
                            int64_t in, int64_t out, double model_fraction, CodeRegion region) {
  const double dx_bytes = d(r.tokens) * d(in) * r.e;
  Op* regather = nullptr;
  if (r.sp) {
    const OpRole saved = b.role();
    b.set_role(OpRole::kWeightGrad);  // only the weight gradient needs the input
    regather =
        b.collective(name + "_input_regather", Dim::kTp, CollectiveKind::kAllGather, dx_bytes);
    b.set_role(saved);
  }
  by_tp_overlap(job, r, regather, UbMethod::kBulk, region);
  pair(regather, b.size());
  b.gemm(name + "_dgrad", r.tokens, in, out, 1, model_fraction);
  Op* reduce =
      b.collective(name + "_dgrad_reduce", Dim::kTp,
                   r.sp ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce, dx_bytes);
  by_tp_overlap(job, r, reduce, UbMethod::kBulk, region);
  pair(reduce, b.size());
  b.set_role(OpRole::kWeightGrad);
  b.gemm(name + "_wgrad", in, out, r.tokens, 1, model_fraction);
  b.set_role(OpRole::kInputGrad);
}
/// Backward of a row-parallel linear Y = X W: gather dY (SP), dgrad, wgrad.
void row_linear_backward(const Job& job, const RankShape& r, Builder& b, const std::string& name,
                         int64_t in, int64_t out) {
  if (r.sp) {
    Op* gather = b.collective(name + "_dout_gather", Dim::kTp, CollectiveKind::kAllGather,
                              d(r.tokens) * d(out) * r.e);
    const bool overlapped =
        by_tp_overlap(job, r, gather, UbMethod::kRingExchange, CodeRegion::kBlock);
    pair(gather, overlapped ? b.size() : -1);
  }
  b.gemm(name + "_dgrad", r.tokens, in, out);
  b.set_role(OpRole::kWeightGrad);
  b.gemm(name + "_wgrad", in, out, r.tokens);
  b.set_role(OpRole::kInputGrad);
}

int64_t mlp_in_columns(const Job& job, int64_t ffn) {
  return job.model.mlp == MlpKind::kSwiglu ? 2 * ffn : ffn;
}

void dense_mlp_forward(const Job& job, const RankShape& r, Builder& b, const std::string& name,
                       int64_t ffn) {
  const int64_t n1 = mlp_in_columns(job, ffn);
  b.gemm(name + "_fc1", r.tokens, n1, r.hidden).saved_bytes = column_input_saved(r);
  activation_forward(job, r, b, name, d(r.tokens), ffn);
  fp8_forward_casts(job, b, name + "_fc2", d(r.tokens) * d(ffn), d(ffn) * d(r.hidden), false);
  const int32_t fc2 = b.size();
  b.gemm(name + "_fc2", r.tokens, r.hidden, ffn).saved_bytes = d(r.tokens) * d(ffn) * r.e;
  tp_reduce_forward(job, r, b, (name + "_reduce").c_str(), fc2, full_hidden_bytes(r));
}
void dense_mlp_backward(const Job& job, const RankShape& r, Builder& b, const std::string& name,
                        int64_t ffn) {
  fp8_sequence_parallel_amax(job, r, b, name + "_fc2_grad");
  fp8_grad_cast(job, b, name + "_fc2", d(r.norm_tokens) * d(r.hidden));
  row_linear_backward(job, r, b, name + "_fc2", ffn, r.hidden);
  activation_backward(job, r, b, name, d(r.tokens), ffn);
  fp8_grad_cast(job, b, name + "_fc1", d(r.tokens) * d(mlp_in_columns(job, ffn)));
  column_linear_backward(job, r, b, name + "_fc1", r.hidden, mlp_in_columns(job, ffn));
}

}  // namespace podsim::strategies::ops
