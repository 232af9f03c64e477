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
                            int64_t out, double model_fraction) {
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
  row_linear_backward(r, b, name + "_fc2", ffn, r.hidden);
  activation_backward(job, r, b, name, d(r.tokens), ffn);
  fp8_grad_cast(job, b, name + "_fc1", d(r.tokens) * d(mlp_in_columns(job, ffn)));
  column_linear_backward(r, b, name + "_fc1", r.hidden, mlp_in_columns(job, ffn));
}

}  // namespace podsim::strategies::ops
