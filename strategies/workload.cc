#include "strategies/workload.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "strategies/memory.h"
#include "strategies/model_counts.h"
#include "strategies/op_builder.h"

namespace podsim::strategies {

using ops::attention_core_backward;
using ops::attention_core_forward;
using ops::Builder;
using ops::CodeRegion;
using ops::column_input_saved;
using ops::column_linear_backward;
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

void layer_forward(const Job& job, const RankShape& r, const LayerKind& kind, Builder& b) {
  const ops::AttnDims a = ops::attention_dims(job, r, kind);
  norm_forward(job, r, b, "attn_norm");
  ops::attention_projections_forward(job, r, b);
  attention_core_forward(job, r, a, b);
  fp8_forward_casts(job, b, "attn_out", d(r.tokens) * a.o_width, a.o_width * d(r.hidden), false);
  const int32_t out = b.size();
  const auto o_width = static_cast<int64_t>(a.o_width);
  b.gemm("attn_out", r.tokens, r.hidden, o_width).saved_bytes = d(r.tokens) * a.o_width * r.e;
  tp_reduce_forward(job, r, b, "attn_reduce", out, full_hidden_bytes(r));
  residual_norm_forward(job, r, b, "attn_residual", "mlp_norm");
  if (kind.moe) {
    moe_forward(job, r, b);
  } else {
    fp8_forward_casts(job, b, "mlp_fc1", d(r.norm_tokens) * d(r.hidden),
                      d(r.hidden) * d(mlp_in_columns(job, r.ffn)), true);
    ops::fp8_sequence_parallel_amax(job, r, b, "mlp_fc1_input");
    sp_gather_forward(job, r, b, "mlp_input_gather");
    dense_mlp_forward(job, r, b, "mlp", r.ffn);
  }
  residual_forward(job, r, b, "mlp_residual");
}

void layer_backward(const Job& job, const RankShape& r, const LayerKind& kind, Builder& b) {
  const ops::AttnDims a = ops::attention_dims(job, r, kind);
  residual_backward(job, r, b, "mlp_residual_bwd");
  if (kind.moe) {
    moe_backward(job, r, b);
  } else {
    dense_mlp_backward(job, r, b, "mlp", r.ffn);
  }
  norm_backward(job, r, b, "mlp_norm_bwd");
  residual_backward(job, r, b, "attn_residual_bwd");
  ops::fp8_sequence_parallel_amax(job, r, b, "attn_out_grad");
  fp8_grad_cast(job, b, "attn_out", d(r.norm_tokens) * d(r.hidden));
  row_linear_backward(job, r, b, "attn_out", static_cast<int64_t>(a.o_width), r.hidden);
  attention_core_backward(job, r, a, b);
  ops::attention_projections_backward(job, r, b);
  norm_backward(job, r, b, "attn_norm_bwd");
}

std::vector<Op> split_backward(std::vector<Op> ops, Pass pass) {
  if (pass == Pass::kBackward) return ops;
  const OpRole wanted = pass == Pass::kBackwardWeight ? OpRole::kWeightGrad : OpRole::kInputGrad;
  return ops::filter_ops(ops, [wanted](const Op& op) { return op.role == wanted; });
}

}  // namespace

double AttentionShape::score_elements() const {
  const double q = d(q_len), kv = d(kv_len);
  if (!causal) return q * kv;
  if (window > 0 && d(window) < kv && q == kv) {
    // Query i sees min(window, i + 1) keys; the window-free count below keeps
    // flash's convention (q kv - q^2 / 2), so the windowed one takes the same
    // halving of the diagonal: q w - w^2 / 2.
    const double w = d(window);
    return q * w - w * w / 2;
  }
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
  r.etp = p.expert_tp;
  r.b = job.training.micro_batch;
  r.s = job.training.seq_len;
  r.s_local = r.s / p.cp;
  r.tokens = r.b * r.s_local;
  r.sp = p.sequence_parallel && p.tp > 1;
  r.norm_tokens = r.sp ? r.tokens / p.tp : r.tokens;
  r.moe_tokens = r.tokens / p.tp;
  r.hidden = m.hidden;
  r.heads = m.heads / p.tp;
  r.kv_heads = std::max<int64_t>(1, kv_heads(m) / p.tp);
  r.head_dim = head_dim(m);
  r.ffn = m.ffn_hidden / p.tp;
  r.vocab = (m.vocab + p.tp - 1) / p.tp;
  r.e = activation_element_bytes(job);
  // Under a framework without fp8 the GEMMs stay 16-bit.
  r.gemm_format = job.training.precision == sim::NumberFormat::kFp8 && !ops::quantized_linears(job)
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

std::vector<Op> layer_ops(const Job& job, const LayerKind& kind, Pass pass) {
  const RankShape r = rank_shape(job);
  if (pass == Pass::kForward || pass == Pass::kRecompute) {
    Builder b(r, OpRole::kForward);
    layer_forward(job, r, kind, b);
    std::vector<Op> ops = b.take();
    if (pass == Pass::kForward) return ops;
    return ops::recomputed_forward(job, r, kind, std::move(ops));
  }
  Builder b(r, OpRole::kInputGrad);
  layer_backward(job, r, kind, b);
  return split_backward(b.take(), pass);
}

LayerKind typical_layer_kind(const Job& job) {
  const ModelShape& m = job.model;
  const bool moe = m.moe.has_value() && dense_layer_count(m) * 2 <= m.layers;
  int64_t sliding = 0;
  for (int64_t l = 0; l < m.layers; ++l) sliding += is_sliding_layer(m, l) ? 1 : 0;
  return {moe, sliding * 2 > m.layers, false};
}

std::vector<Op> layer_ops(const Job& job, Pass pass) {
  return layer_ops(job, typical_layer_kind(job), pass);
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
    norm_forward(job, r, b, "final_norm", CodeRegion::kAroundBlocks);
    sp_gather_forward(job, r, b, "head_input_gather", CodeRegion::kAroundBlocks);
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
  column_linear_backward(job, r, b, "logits", r.hidden, r.vocab, 1.0, CodeRegion::kAroundBlocks);
  norm_backward(job, r, b, "final_norm_bwd", CodeRegion::kAroundBlocks);
  return split_backward(b.take(), pass);
}

namespace {

/// One update of the optimizer as the framework implements it: HBM bytes
/// per parameter besides the gradient reads, how many times it reads each
/// gradient, and its foreach ops (one multi-tensor launch sequence each) or
/// per-tensor kernels. AdamW with fp32 parameters and moments.
struct UpdateKernels {
  double bytes = 0;         ///< per parameter, gradient reads excluded
  double grad_reads = 1;    ///< gradient reads per parameter
  int32_t foreach_ops = 0;  ///< multi-tensor ops over every tensor
  int32_t per_tensor = 0;   ///< kernels per parameter tensor
};
UpdateKernels update_kernels(OptimizerImpl implementation) {
  switch (implementation) {
    case OptimizerImpl::kFused:
      // apex / TE / DeepSpeed FusedAdam: read p, m, v and write them, once.
      return {24, 1, 1, 0};
    case OptimizerImpl::kForeach:
      // torch.optim.AdamW(foreach=True), _multi_tensor_adamw: mul_ (decay,
      // r/w p 8), lerp_ (m: 12 with g), mul_ (v: 8), addcmul_ (v: 12 with
      // g), sqrt (8), div_ (8), add_ eps (8), addcdiv_ (p, m, denom: 16).
      return {72, 2, 8, 0};
    case OptimizerImpl::kForLoop:
      // Composer DecoupledAdamW: a Python loop of 9 ops per tensor, 88 B
      // per parameter with fp32 gradients read twice (decoupled_weight_decay.py).
      return {80, 2, 0, 9};
    case OptimizerImpl::kXla:
      // optax.adamw under XLA: one fused update per parameter leaf.
      return {24, 1, 0, 1};
  }
  return {24, 1, 1, 0};
}

// PyTorch's and apex's multi_tensor_apply: 65,536-element chunks, at most
// 320 blocks per launch (MultiTensorApply.cuh), so a foreach op over n
// elements launches about n / (320 x 65,536) kernels.
constexpr double kMultiTensorLaunchElements = 320.0 * 65536.0;

}  // namespace

std::vector<Op> optimizer_ops(const Job& job, double params, double tensors) {
  const RankShape r = rank_shape(job);
  const OptimizerPolicy& o = job.software.optimizer;
  Builder b(r, OpRole::kOptimizer);
  const double g = grad_element_bytes(job);
  auto launches = [&](int32_t foreach_ops, int32_t per_tensor) {
    const double foreach = std::max(1.0, std::ceil(params / kMultiTensorLaunchElements));
    return static_cast<int32_t>(std::max(1.0, static_cast<double>(foreach_ops) * foreach +
                                                  static_cast<double>(per_tensor) * tensors));
  };
  // Gradient clipping's global norm: a foreach norm over every gradient.
  b.memory("grad_norm", params * g, 2 * params, launches(1, 0));
  const UpdateKernels u = update_kernels(o.implementation);
  // The framework's copies around the update (Megatron: fp32 shard into the
  // 16-bit parameters) run as one more kernel.
  const int32_t copies = o.extra_bytes_per_param > 0 ? 1 : 0;
  Op* step = nullptr;
  if (job.training.optimizer == Optimizer::kAdam) {
    step = &b.memory("adam_step", params * (u.bytes + u.grad_reads * g + o.extra_bytes_per_param),
                     kAdamFlops * params, launches(u.foreach_ops, u.per_tensor) + copies);
  } else {
    // momentum SGD: read grad, weights, momentum; write weights, momentum
    step = &b.memory("sgd_step", params * (g + 4 * 2 + 4 * 2 + o.extra_bytes_per_param),
                     kSgdFlops * params, 1 + copies);
  }
  // clip_grad_norm_'s total_norm.item(): the update is issued once the GPU
  // has computed the norm.
  step->host_sync = o.clip_host_sync;
  return b.take();
}

double optimizer_dtensor_dispatches(const Job& job, double tensors) {
  const OptimizerPolicy& o = job.software.optimizer;
  if (!o.dtensor_params) return 0;
  // Every op of the norm and the update goes through DTensor's dispatch
  // tensor by tensor.
  const UpdateKernels u = update_kernels(o.implementation);
  return tensors * static_cast<double>(1 + u.foreach_ops + u.per_tensor);
}

std::vector<Op> mtp_ops(const Job& job, Pass pass) {
  const RankShape r = rank_shape(job);
  if (pass == Pass::kRecompute) return {};
  const double full = full_hidden_bytes(r);
  const LayerKind kind = mtp_layer_kind(job);
  // DeepSeek-V3 section 2.2: h'_i = M [RMSNorm(h_i); RMSNorm(Emb(t_{i+1}))],
  // one transformer block, then the shared output head.
  if (pass == Pass::kForward) {
    Builder b(r, OpRole::kForward);
    b.memory("mtp_embed_lookup", 2 * full, 0);
    b.collective("mtp_embed_reduce", Dim::kTp,
                 r.sp ? CollectiveKind::kReduceScatter : CollectiveKind::kAllReduce, full);
    norm_forward(job, r, b, "mtp_hidden_norm");
    norm_forward(job, r, b, "mtp_embed_norm");
    sp_gather_forward(job, r, b, "mtp_input_gather");
    const int32_t proj = b.size();
    b.gemm("mtp_eh_proj", r.tokens, r.hidden / r.tp, 2 * r.hidden).saved_bytes =
        2 * column_input_saved(r);
    tp_reduce_forward(job, r, b, "mtp_eh_proj_gather", proj, full);
    layer_forward(job, r, kind, b);
    std::vector<Op> ops = b.take();
    ops::append_ops(ops, head_ops(job, Pass::kForward));
    return ops;
  }
  std::vector<Op> ops = head_ops(job, pass);
  Builder b(r, OpRole::kInputGrad);
  layer_backward(job, r, kind, b);
  b.collective("mtp_eh_proj_dout_gather", Dim::kTp, CollectiveKind::kAllGather, full);
  b.gemm("mtp_eh_proj_dgrad", r.tokens, 2 * r.hidden, r.hidden / r.tp);
  b.set_role(OpRole::kWeightGrad);
  b.gemm("mtp_eh_proj_wgrad", 2 * r.hidden, r.hidden / r.tp, r.tokens);
  b.set_role(OpRole::kInputGrad);
  norm_backward(job, r, b, "mtp_embed_norm_bwd");
  norm_backward(job, r, b, "mtp_hidden_norm_bwd");
  b.set_role(OpRole::kWeightGrad);
  b.memory("mtp_embed_wgrad", full + 2 * d(r.tokens) * d(r.hidden) * grad_element_bytes(job),
           d(r.tokens) * d(r.hidden));
  b.set_role(OpRole::kInputGrad);
  ops::append_ops(ops, split_backward(b.take(), pass));
  return ops;
}

namespace {

/// DeepSpeed's 2021 ZeRO-3 (data_parallel.param_gather "parameter") on the
/// host: every sub-module whose weights are partitioned runs its Python
/// hooks; its fetch gathers each weight with its own all_gather, after a
/// torch.cuda.synchronize() per parameter and one per fetch, from a list of
/// per-rank views; each backward reduce-scatters each gradient from such a
/// list (stage3.py, partition_parameters.py @v0.3.15). Which gather a pass
/// waits for follows the schedule (schedule_builder.cc): the recompute's,
/// and the backward's own when it gathers again or nothing recomputes.
void add_zero3_parameter_host_work(const Job& job, Pass pass, const WorkRange& range,
                                   HostWork& host) {
  const DataParallelPolicy& dp = job.software.data_parallel;
  const int64_t group = shard_group_size(job);
  if (job.plan.zero != 3 || dp.param_gather != ParamGather::kParameter || group <= 1) return;
  const int64_t partitioned = partitioned_parameter_tensors(job, range);
  const bool recomputes = job.plan.recompute.mode != RecomputeMode::kNone;
  const bool backward = pass == Pass::kBackward || pass == Pass::kBackwardInput;
  const bool gathers = !backward || !recomputes || dp.regather_for_recompute;
  const int64_t gathered = gathers ? partitioned : 0;
  const int64_t scattered = pass == Pass::kBackward ? partitioned : 0;
  host.hooked_units += partitioned;
  host.syncs += 2 * gathered;
  host.rank_list_entries += static_cast<double>((gathered + scattered) * group);
}

/// The copies FSDP2 runs on the compute stream around its collectives
/// (DataParallelPolicy::copies_on_compute_stream): each gathered unit's flat
/// all-gather output split into its parameters (foreach_all_gather_copy_out:
/// read and write the unit's 16-bit weights) before its forward and its
/// backward, and the unit's gradients cat into the reduce-scatter input in
/// the reduce format (foreach_reduce_scatter_copy_in: read the autograd
/// gradients, write the cast copy) after its backward.
std::vector<Op> fsdp_copy_ops(const Job& job, Pass pass, const WorkRange& range) {
  const bool gathers =
      pass == Pass::kForward || pass == Pass::kBackward || pass == Pass::kBackwardInput;
  const bool reduces = pass == Pass::kBackward || pass == Pass::kBackwardWeight;
  if (job.plan.zero != 3 || !job.software.data_parallel.copies_on_compute_stream ||
      shard_group_size(job) <= 1 || (!gathers && !reduces)) {
    return {};
  }
  const double params = range_parameters(job, range).total();
  const double e = weight_element_bytes(job);
  Builder b(rank_shape(job), pass == Pass::kForward ? OpRole::kForward : OpRole::kInputGrad);
  if (gathers) b.memory("fsdp_copy_out", params * 2 * e, 0);
  if (reduces) {
    b.set_role(OpRole::kWeightGrad);
    b.memory("fsdp_copy_in", params * (e + grad_element_bytes(job)), 0);
  }
  return b.take();
}

/// The fp8 GEMMs of a range's layers, one per expert of a grouped GEMM: the
/// GEMMs whose amaxes the chunk's fp8 autocast region holds.
double fp8_layer_gemms(const Job& job, const WorkRange& range) {
  double gemms = 0;
  for (const LayerRun& run : range.runs) {
    for (const Op& op : layer_ops(job, run.kind, Pass::kForward)) {
      if (op.kind == OpKind::kGemm && op.format == sim::NumberFormat::kFp8) {
        gemms += static_cast<double>(op.count * op.gemm.batch * run.count);
      }
    }
  }
  return gemms;
}

}  // namespace

Work make_work(const Job& job, Pass pass, const WorkRange& range) {
  Work w;
  const bool forward = pass == Pass::kForward || pass == Pass::kRecompute;
  const char* pass_name = pass == Pass::kForward          ? "forward"
                          : pass == Pass::kBackward       ? "backward"
                          : pass == Pass::kBackwardInput  ? "backward_input"
                          : pass == Pass::kBackwardWeight ? "backward_weight"
                                                          : "recompute";
  int64_t layers = 0;
  for (const LayerRun& run : range.runs) layers += run.count;
  w.name = std::string(pass_name) + " " + std::to_string(layers) + " layers" +
           (range.embedding ? " +embedding" : "") + (range.mtp > 0 ? " +mtp" : "") +
           (range.head ? " +head" : "");
  auto add = [&w](std::string name, int64_t repeat, std::vector<Op> ops) {
    if (ops.empty() || repeat == 0) return;
    w.segments.push_back({std::move(name), repeat, std::move(ops)});
  };
  auto add_layers = [&](const LayerRun& run) {
    add(run.kind.moe ? "moe layer" : "layer", run.count, layer_ops(job, run.kind, pass));
  };
  // Transformer Engine's delayed scaling reduces the amaxes of the region
  // around a chunk's layers (Megatron's TransformerBlock) as it closes, and
  // in the backward of its first fp8 module; a recompute does not.
  const bool amax_forward = pass == Pass::kForward && range.chunk_last_layer;
  const bool amax_backward =
      (pass == Pass::kBackward || pass == Pass::kBackwardInput) && range.chunk_first_layer;
  auto add_amax_reduction = [&](bool forward_region) {
    add("fp8 amax", 1,
        ops::fp8_amax_reduction_ops(job, fp8_layer_gemms(job, range), forward_region));
  };
  if (forward) {
    if (range.embedding) add("embedding", 1, embedding_ops(job, pass));
    for (const LayerRun& run : range.runs) add_layers(run);
    if (amax_forward) add_amax_reduction(true);
    if (range.head) add("head", 1, head_ops(job, pass));
    if (range.mtp > 0) add("mtp", range.mtp, mtp_ops(job, pass));
  } else {
    if (range.mtp > 0) add("mtp", range.mtp, mtp_ops(job, pass));
    if (range.head) add("head", 1, head_ops(job, pass));
    for (auto it = range.runs.rbegin(); it != range.runs.rend(); ++it) add_layers(*it);
    if (amax_backward) add_amax_reduction(false);
    if (range.embedding) add("embedding", 1, embedding_ops(job, pass));
  }
  // torch.compile per block: each layer's pass is one call into its
  // compiled region (XLA compiles the whole step: no per-block call).
  if (job.software.elementwise.compiled && job.software.compiled_block_calls) {
    for (const LayerRun& run : range.runs) w.host.compiled_region_calls += run.count;
  }
  // FSDP2's copy-out comes before the unit's compute and its copy-in after;
  // on one stream only their sum matters.
  add("fsdp copies", 1, fsdp_copy_ops(job, pass, range));
  add_zero3_parameter_host_work(job, pass, range, w.host);
  // MaxText's offloaded activations leave during the forward and come back
  // for the backward (before the recompute that starts from them).
  if (job.plan.activation_offload != 0 &&
      (pass == Pass::kForward || pass == Pass::kBackward || pass == Pass::kBackwardInput)) {
    double bytes = 0;
    for (const LayerRun& run : range.runs) {
      bytes += d(run.count) *
               policy_tensors(job, layer_ops(job, run.kind, Pass::kForward)).offloaded_bytes;
    }
    (pass == Pass::kForward ? w.host_copy_out_bytes : w.host_copy_in_bytes) = bytes;
  }
  return w;
}

Work make_work(const Job& job, Pass pass, int64_t layers, bool embedding, bool head) {
  WorkRange range;
  if (layers > 0) range.runs.push_back({typical_layer_kind(job), layers});
  range.embedding = embedding;
  range.head = head;
  return make_work(job, pass, range);
}

}  // namespace podsim::strategies
