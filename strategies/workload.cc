#include "strategies/workload.h"

#include <algorithm>
#include <string>
#include <utility>

#include "strategies/memory.h"
#include "strategies/op_builder.h"

namespace podsim::strategies {

using ops::attention_core_backward;
using ops::attention_core_forward;
using ops::Builder;
using ops::column_input_saved;
using ops::column_linear_backward;
using ops::d;
using ops::dense_mlp_backward;
using ops::dense_mlp_forward;
using ops::fp8_forward_casts;
using ops::fp8_grad_cast;
using ops::full_hidden_bytes;
using ops::kAdamFlops;
using ops::kDropoutFlops;
using ops::kSgdFlops;
using ops::kSoftmaxFlops;
using ops::mlp_in_columns;
using ops::moe_backward;
using ops::moe_forward;
using ops::norm_backward;
using ops::norm_forward;
using ops::residual_backward;
using ops::residual_forward;
using ops::residual_norm_forward;
using ops::rope_backward;
using ops::rope_forward;
using ops::row_linear_backward;
using ops::sp_gather_forward;
using ops::tp_reduce_forward;

namespace {

/// HBM bytes per logit element and kernels of the softmax cross-entropy over
/// the (vocab-parallel) logits, from each implementation's kernels.
struct LossKernels {
  double forward_bytes;
  int32_t forward_kernels;
  double backward_bytes;
  int32_t backward_kernels;
};
LossKernels loss_kernels(LossImpl impl) {
  switch (impl) {
    case LossImpl::kVocabParallelFp32:
      // megatron/core/tensor_parallel/cross_entropy.py l.20-79 on
      // output.float(): cast r2 w4, max r4, sub_ r4 w4, exp r4 w4, sum r4,
      // div_ r4 w4 (the softmax kept); backward: grad = softmax - onehot
      // times the loss gradient r4 w4, cast back r4 w2.
      return {38, 6, 14, 2};
    case LossImpl::kFp32Upcast:
      // cross_entropy(logits.float()): cast r2 w4; log_softmax reads the row
      // for its max, its sum of exponentials and the output (r12 w4); nll
      // gathers. Backward: nll's zero-filled gradient w4, log_softmax's
      // backward reads the gradient twice and its output (r12 w4), cast back
      // r4 w2 (torchtitan train.py l.131-134 @9dec370; PyTorch's
      // cunn_SoftMaxForward / Backward).
      return {22, 3, 26, 4};
    case LossImpl::kFused:
      // One online-softmax pass over the 16-bit logits, one backward kernel
      // reading them and writing the gradient (flash-attn's xentropy kernel
      // behind llm-foundry's fused_crossentropy; XLA's fused softmax
      // cross-entropy).
      return {2, 1, 4, 1};
  }
  return {38, 6, 14, 2};
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
  fp8_forward_casts(job, b, "qkv", d(r.norm_tokens) * d(r.hidden), d(r.hidden) * d(qkv_out), true);
  sp_gather_forward(job, r, b, "attn_input_gather");
  b.gemm("qkv", r.tokens, qkv_out, r.hidden, 1, qkv_model_fraction(job, r)).saved_bytes =
      column_input_saved(r);
  rope_forward(job, r, b);
  attention_core_forward(job, r, b);
  fp8_forward_casts(job, b, "attn_out", d(r.tokens) * d(r.heads * d_h),
                    d(r.heads * d_h) * d(r.hidden), false);
  const int32_t out = b.size();
  b.gemm("attn_out", r.tokens, r.hidden, r.heads * d_h).saved_bytes =
      d(r.tokens) * d(r.heads * d_h) * r.e;
  tp_reduce_forward(job, r, b, "attn_reduce", out, full_hidden_bytes(r));
  residual_norm_forward(job, r, b, "attn_residual", "mlp_norm");
  if (job.model.moe) {
    moe_forward(job, r, b);
  } else {
    fp8_forward_casts(job, b, "mlp_fc1", d(r.norm_tokens) * d(r.hidden),
                      d(r.hidden) * d(mlp_in_columns(job, r.ffn)), true);
    sp_gather_forward(job, r, b, "mlp_input_gather");
    dense_mlp_forward(job, r, b, "mlp", r.ffn);
  }
  residual_forward(job, r, b, "mlp_residual");
}

void layer_backward(const Job& job, const RankShape& r, Builder& b) {
  const int64_t d_h = r.head_dim;
  const int64_t qkv_out = (r.heads + 2 * r.kv_heads) * d_h;
  residual_backward(job, r, b, "mlp_residual_bwd");
  if (job.model.moe) {
    moe_backward(job, r, b);
  } else {
    dense_mlp_backward(job, r, b, "mlp", r.ffn);
  }
  norm_backward(job, r, b, "mlp_norm_bwd");
  residual_backward(job, r, b, "attn_residual_bwd");
  fp8_grad_cast(job, b, "attn_out", d(r.norm_tokens) * d(r.hidden));
  row_linear_backward(r, b, "attn_out", r.heads * d_h, r.hidden);
  attention_core_backward(job, r, b);
  rope_backward(job, r, b);
  fp8_grad_cast(job, b, "qkv", d(r.tokens) * d(qkv_out));
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

/// torchtitan's op-level selective checkpointing (parallelize_llama.py
/// _save_list and _custom_policy @9dec370): in each block the outputs of the
/// 1st, 3rd, 5th, ... aten.mm are saved -- torchtitan's separate wq, wk, wv,
/// wo, w1, w3, w2, in that order, so wq, wv, w1 and w2 (GeLU: wq, wv, w1) --
/// with SDPA's and the reduce-scatters'; everything else runs again before
/// the backward, element-wise ops included. torchao Float8 linears call
/// _scaled_mm, which the list does not name: every linear runs again.
std::vector<Op> matmul_save_list(const Job& job, const RankShape& r, std::vector<Op> ops) {
  const bool float8 = ops::fp8_linears(job);
  const bool swiglu = job.model.mlp == MlpKind::kSwiglu;
  auto recompute_columns = [&](const Op& op) -> int64_t {
    if (float8) return op.gemm.n;
    if (op.name == "qkv") return r.kv_heads * r.head_dim;         // wk only
    if (op.name == "mlp_fc1") return swiglu ? op.gemm.n / 2 : 0;  // w3 only
    if (op.name == "mlp_fc2") return swiglu ? 0 : op.gemm.n;
    return op.gemm.n;  // wo, and any other matrix product
  };
  for (Op& op : ops) {
    if (op.kind != OpKind::kGemm || op.attention_core) continue;
    const int64_t n = recompute_columns(op);
    op.flops *= static_cast<double>(n) / static_cast<double>(op.gemm.n);
    op.gemm.n = n;
  }
  return filter_ops(ops, [](const Op& op) {
    if (op.attention_core) return false;  // SDPA saved (and its CP exchanges)
    if (op.kind == OpKind::kGemm) return op.gemm.n > 0;
    if (op.kind == OpKind::kCollective) {
      return op.collective.kind != CollectiveKind::kReduceScatter;
    }
    return true;
  });
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
  // Under a framework without fp8 the GEMMs stay 16-bit.
  r.gemm_format = job.training.precision == sim::NumberFormat::kFp8 && !ops::fp8_linears(job)
                      ? sim::NumberFormat::kBf16
                      : job.training.precision;
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
        if (job.software.selective == SelectiveRecompute::kMatmulSaveList) {
          return as_recompute(matmul_save_list(job, r, std::move(ops)));
        }
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
  RankShape r = rank_shape(job);
  // The vocabulary projection stays 16-bit unless the framework puts it in fp8.
  if (!job.software.fp8.output_layer) r.gemm_format = r.act_format;
  const double logits = d(r.tokens) * d(r.vocab);
  if (pass == Pass::kRecompute) return {};
  if (pass == Pass::kForward) {
    Builder b(r, OpRole::kForward);
    norm_forward(job, r, b, "final_norm");
    sp_gather_forward(job, r, b, "head_input_gather");
    b.gemm("logits", r.tokens, r.vocab, r.hidden).saved_bytes = column_input_saved(r);
    const LossKernels loss = loss_kernels(job.software.loss);
    // What the loss keeps for its backward pass (memory.h loss_memory:
    // the fp32 softmax of Megatron and torchtitan, a fused kernel's logits).
    b.memory("cross_entropy", logits * loss.forward_bytes, kSoftmaxFlops * logits,
             loss.forward_kernels)
        .saved_bytes = logits * loss_memory(job).kept;
    Op* stats =
        b.collective("cross_entropy_stats", Dim::kTp, CollectiveKind::kAllReduce, d(r.tokens) * 4);
    if (stats != nullptr) stats->count = 3;  // max, sum of exp, target logit
    return b.take();
  }
  Builder b(r, OpRole::kInputGrad);
  const LossKernels loss = loss_kernels(job.software.loss);
  b.memory("cross_entropy_bwd", logits * loss.backward_bytes, 2 * logits, loss.backward_kernels);
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
  // torch.compile per block: each layer's pass is one call into its
  // compiled region (XLA compiles the whole step: no per-block call).
  if (job.software.elementwise.compiled && job.software.compiled_block_calls) {
    w.host.compiled_region_calls = layers;
  }
  return w;
}

}  // namespace podsim::strategies
