#include "strategies/memory.h"

#include <algorithm>

#include "sim/to_double.h"
#include "strategies/model_counts.h"
#include "strategies/workload.h"

namespace podsim::strategies {
namespace {

double sum(const std::vector<double>& tensors) {
  double total = 0;
  for (double b : tensors) total += b;
  return total;
}

/// Each op's saved tensors, `count` times over.
std::vector<double> saved_list(const std::vector<Op>& ops) {
  std::vector<double> out;
  for (const Op& op : ops) {
    for (int64_t i = 0; i < op.count; ++i) {
      if (op.saved_bytes > 0) out.push_back(op.saved_bytes);
      if (op.saved_core_bytes > 0) out.push_back(op.saved_core_bytes);
    }
  }
  return out;
}

void append(std::vector<double>& to, const std::vector<double>& from) {
  to.insert(to.end(), from.begin(), from.end());
}

/// torchtitan's op-level selective checkpointing (parallelize_llama.py
/// _save_list and _custom_policy @9dec370): of a block's seven aten.mm calls
/// (wq, wk, wv, wo, w1, w3, w2) the 1st, 3rd, 5th and 7th outputs are
/// saved, and SDPA's output and logsumexp, and under TP the reduce-scatter
/// outputs with sequence parallelism; the block input is the checkpoint's. torchao's Float8Linear
/// calls _scaled_mm, not in the save list: with fp8 only the attention
/// outputs are saved.
std::vector<double> matmul_save_list(const Job& job, const LayerTensors& tensors) {
  const RankShape r = rank_shape(job);
  const double t = d(r.tokens), e = r.e;
  std::vector<double> out{tensors.input};
  out.push_back(t * d(r.heads * r.head_dim) * e);           // SDPA output
  out.push_back(d(r.b) * d(r.heads) * d(r.s_local) * 4.0);  // logsumexp
  if (job.training.precision != sim::NumberFormat::kFp8) {
    out.push_back(t * d(r.heads * r.head_dim) * e);     // wq
    out.push_back(t * d(r.kv_heads * r.head_dim) * e);  // wv
    const bool swiglu = job.model.mlp == MlpKind::kSwiglu;
    out.push_back(t * d(r.ffn) * e);                 // w1 (SwiGLU gate; GeLU: fc1)
    if (swiglu) out.push_back(t * d(r.hidden) * e);  // w2
  }
  if (r.sp) {
    for (int i = 0; i < 2; ++i) out.push_back(d(r.norm_tokens) * d(r.hidden) * e);
  }
  return out;
}

}  // namespace

std::vector<double> LayerTensors::full() const {
  std::vector<double> out = weight_inputs;
  append(out, other_saved);
  append(out, core);
  return out;
}

LayerTensors layer_tensors(const Job& job, const LayerKind& kind) {
  const RankShape r = rank_shape(job);
  LayerTensors t;
  const std::vector<Op> forward = layer_ops(job, kind, Pass::kForward);
  if (named_recompute_policy(job)) {
    t.named_policy = true;
    t.policy = policy_tensors(job, forward);
  }
  for (const Op& op : forward) {
    const bool weight_gemm = op.kind == OpKind::kGemm && !op.attention_core;
    for (int64_t i = 0; i < op.count; ++i) {
      if (op.saved_bytes > 0) {
        (weight_gemm ? t.weight_inputs : t.other_saved).push_back(op.saved_bytes);
      }
      if (op.saved_core_bytes > 0) t.core.push_back(op.saved_core_bytes);
      if (weight_gemm) {
        t.output_grads.push_back(d(op.gemm.m) * d(op.gemm.n) * d(op.gemm.batch) * r.e);
      }
    }
  }
  t.input = d(r.norm_tokens) * d(r.hidden) * r.e;
  t.full_recompute = kind.full_recompute;
  return t;
}

LayerTensors layer_tensors(const Job& job) { return layer_tensors(job, typical_layer_kind(job)); }

const LayerTensors& LayerTensorsByKind::operator()(const LayerKind& kind) {
  auto it = built_.find(kind);
  if (it == built_.end()) it = built_.emplace(kind, layer_tensors(job_, kind)).first;
  return it->second;
}

std::vector<double> embedding_tensors(const Job& job) {
  return saved_list(embedding_ops(job, Pass::kForward));
}
std::vector<double> head_tensors(const Job& job) {
  return saved_list(head_ops(job, Pass::kForward));
}
std::vector<double> mtp_tensors(const Job& job) { return saved_list(mtp_ops(job, Pass::kForward)); }

std::vector<double> kept_tensors(const Job& job, const LayerTensors& tensors,
                                 const ChunkInfo& chunk, int64_t layer) {
  if (tensors.full_recompute) return {tensors.input};
  if (tensors.named_policy) return tensors.policy.kept;
  switch (job.plan.recompute.mode) {
    case RecomputeMode::kNone:
      return tensors.full();
    case RecomputeMode::kSelective: {
      if (job.software.selective == SelectiveRecompute::kMatmulSaveList) {
        return matmul_save_list(job, tensors);
      }
      std::vector<double> out = tensors.weight_inputs;
      append(out, tensors.other_saved);
      return out;
    }
    case RecomputeMode::kFull:
      return {tensors.input};
    case RecomputeMode::kEvery:
      if ((layer - chunk.layer_begin) % job.plan.recompute.every_layers == 0) {
        return {tensors.input};
      }
      return {};
  }
  return {};
}

RecomputeTensors recompute_tensors(const Job& job, const LayerTensors& tensors, int64_t layers) {
  if (tensors.full_recompute) return {tensors.full(), 1};
  if (tensors.named_policy) return {tensors.policy.recomputed, 1};
  switch (job.plan.recompute.mode) {
    case RecomputeMode::kNone:
      return {};
    case RecomputeMode::kSelective:
      // An op-level policy recomputes every op it does not save: what the
      // backward reads comes back but for the saved part (counted whole).
      if (job.software.selective == SelectiveRecompute::kMatmulSaveList) {
        return {tensors.full(), 1};
      }
      return {tensors.core, 1};
    case RecomputeMode::kFull:
      return {tensors.full(), 1};
    case RecomputeMode::kEvery:
      return {tensors.full(), std::min(job.plan.recompute.every_layers, layers)};
  }
  return {};
}

RecomputeTensors range_recompute_tensors(LayerTensorsByKind& tensors, const Job& job,
                                         const ChunkInfo& chunk, int64_t layer_begin,
                                         int64_t layer_end) {
  RecomputeTensors largest;
  double largest_bytes = 0;
  for (const LayerRun& run : layer_runs(job, chunk, layer_begin, layer_end)) {
    RecomputeTensors r = recompute_tensors(job, tensors(run.kind), layer_end - layer_begin);
    const double bytes = d(r.repeats) * sum(r.tensors);
    if (bytes > largest_bytes) {
      largest_bytes = bytes;
      largest = std::move(r);
    }
  }
  return largest;
}

RecomputeTensors range_recompute_tensors(const Job& job, const ChunkInfo& chunk,
                                         int64_t layer_begin, int64_t layer_end) {
  LayerTensorsByKind tensors(job);
  return range_recompute_tensors(tensors, job, chunk, layer_begin, layer_end);
}

double logit_elements(const Job& job) {
  const RankShape r = rank_shape(job);
  return d(r.tokens) * d(r.vocab);
}

LossMemory loss_memory(const Job& job) {
  const RankShape r = rank_shape(job);
  LossMemory m;
  switch (job.software.loss) {
    case LossImpl::kVocabParallelFp32:
      // Megatron's vocab_parallel_cross_entropy(logits.float()): the fp32
      // copy becomes the softmax in place (max, sub_, exp out=, div_) and is
      // kept; its backward turns it into the gradient in place and casts it
      // to 16 bits (core/tensor_parallel/cross_entropy.py).
      m.kept = 4;
      m.forward = {r.e};   // the 16-bit logits, until the loss is computed
      m.backward = {r.e};  // the 16-bit logit gradient
      break;
    case LossImpl::kFp32Upcast:
      // cross_entropy(logits.float()) (torchtitan train.py l.131-134): keeps
      // the fp32 log-softmax. Without TP, ATen's log_softmax writes it in
      // one kernel next to the fp32 copy and the 16-bit logits; nll_loss's
      // backward zero-fills a gradient and log_softmax's backward writes
      // another. Under TP (loss_parallel, torch/distributed/tensor/parallel/
      // loss.py) the decomposition also makes x - max and exp(x - max); the
      // backward makes zeros, exp(x) and their sum.
      m.kept = 4;
      if (r.tp > 1) {
        m.forward = {r.e, 4, 4, 4};
        m.backward = {4, 4, 4};
      } else {
        m.forward = {r.e, 4};
        m.backward = {4, 4};
      }
      break;
    case LossImpl::kFused:
      // One kernel each way on the 16-bit logits, which it keeps (flash-attn
      // xentropy saves the logits and the row statistics; XLA's fusion).
      m.kept = r.e;
      m.forward = {};
      m.backward = {r.e};
      break;
  }
  return m;
}

std::vector<double> backward_working_tensors(const Job& job) {
  const RankShape r = rank_shape(job);
  double out = 0, in = 0;
  for (const Op& op : layer_ops(job, Pass::kForward)) {
    if (op.kind != OpKind::kGemm || op.attention_core) continue;
    const double mn = d(op.gemm.m) * d(op.gemm.n) * d(op.gemm.batch) * r.e;
    const double mk = d(op.gemm.m) * d(op.gemm.k) * d(op.gemm.batch) * r.e;
    if (mn + mk > out + in) {
      out = mn;
      in = mk;
    }
  }
  return {out, in};
}

LayerActivations layer_activations(const Job& job, const LayerKind& kind) {
  const LayerTensors t = layer_tensors(job, kind);
  LayerActivations a;
  a.weight_inputs = sum(t.weight_inputs);
  a.saved = a.weight_inputs + sum(t.other_saved);
  a.core = sum(t.core);
  a.output_grads = sum(t.output_grads);
  a.input = t.input;
  return a;
}

LayerActivations layer_activations(const Job& job) {
  return layer_activations(job, typical_layer_kind(job));
}

double embedding_activation_bytes(const Job& job) { return sum(embedding_tensors(job)); }
double head_activation_bytes(const Job& job) { return sum(head_tensors(job)); }
double mtp_activation_bytes(const Job& job) { return sum(mtp_tensors(job)); }

double stored_activation_bytes(const Job& job, const ChunkInfo& chunk, int64_t layer_begin,
                               int64_t layer_end, bool embedding, bool head, int64_t mtp) {
  LayerTensorsByKind tensors(job);
  return stored_activation_bytes(tensors, job, chunk, layer_begin, layer_end, embedding, head, mtp);
}

double stored_activation_bytes(LayerTensorsByKind& tensors, const Job& job, const ChunkInfo& chunk,
                               int64_t layer_begin, int64_t layer_end, bool embedding, bool head,
                               int64_t mtp) {
  double total = 0;
  int64_t l = layer_begin;
  for (const LayerRun& run : layer_runs(job, chunk, layer_begin, layer_end)) {
    const LayerTensors& t = tensors(run.kind);
    for (int64_t i = 0; i < run.count; ++i, ++l) total += sum(kept_tensors(job, t, chunk, l));
  }
  if (embedding) total += embedding_activation_bytes(job);
  if (head) total += head_activation_bytes(job);
  if (mtp > 0) total += d(mtp) * mtp_activation_bytes(job);
  return total;
}

double recompute_transient_bytes(const Job& job, const ChunkInfo& chunk, int64_t layer_begin,
                                 int64_t layer_end) {
  const RecomputeTensors r = range_recompute_tensors(job, chunk, layer_begin, layer_end);
  return d(r.repeats) * sum(r.tensors);
}

double korthikanti_layer_bytes(const Job& job) {
  const RankShape r = rank_shape(job);
  const double s = d(r.s_local), b = d(r.b), h = d(r.hidden), a = d(job.model.heads);
  const double t = d(r.tp);
  const double sbh = s * b * h;
  const bool sp = r.sp;
  switch (job.plan.recompute.mode) {
    case RecomputeMode::kNone:
      return sp ? sbh / t * (34 + 5 * a * s / h) : sbh * (10 + 24 / t + 5 * a * s / (h * t));
    case RecomputeMode::kSelective:
      return sp ? sbh / t * 34 : sbh * (10 + 24 / t);
    case RecomputeMode::kFull:
      return sp ? 2 * sbh / t : 2 * sbh;
    case RecomputeMode::kEvery:
      return (sp ? 2 * sbh / t : 2 * sbh) / d(job.plan.recompute.every_layers);
  }
  return 0;
}

double optimizer_moment_bytes_per_param(const Job& job) {
  return job.training.optimizer == Optimizer::kAdam ? 8.0 : 4.0;
}

double master_weight_bytes_per_param(const Job& job) {
  return job.training.precision != sim::NumberFormat::kFp32 ? 4.0 : 0.0;
}

double optimizer_bytes_per_param(const Job& job) {
  return optimizer_moment_bytes_per_param(job) + master_weight_bytes_per_param(job);
}

double optimizer_parameters(const Job& job, int64_t stage) {
  const StageParams p = stage_parameters(job, stage);
  if (job.plan.zero == 0) return p.total();
  return p.dense / d(shard_group_size(job)) + p.expert / d(expert_dp_size(job));
}

TensorState tensor_state(const Job& job, double elements, bool expert) {
  const double sharded = elements / d(expert ? expert_dp_size(job) : shard_group_size(job));
  const int zero = job.plan.zero;
  const bool grads_sharded = zero == 3 || (zero == 2 && zero2_reduces_every_micro_batch(job));
  const double optimized = zero >= 1 ? sharded : elements;
  TensorState s;
  if (job.software.memory.param_storage == ParamStorage::kMasterOnly) {
    s.weights = optimized * 4.0;  // the fp32 parameter the optimizer updates
  } else {
    s.weights = (zero == 3 ? sharded : elements) * weight_element_bytes(job);
    s.master = optimized * master_weight_bytes_per_param(job);
  }
  s.grads = (grads_sharded ? sharded : elements) * grad_element_bytes(job);
  s.moments = optimized * optimizer_moment_bytes_per_param(job);
  return s;
}

StaticMemory static_memory(const Job& job, int64_t stage) {
  const bool per_step_grads = job.software.memory.grad_buffers == GradBuffers::kPerStep;
  StaticMemory m;
  auto add = [&](const std::vector<ParamTensor>& tensors, double times) {
    for (const ParamTensor& t : tensors) {
      const TensorState s = tensor_state(job, t.elements, t.expert);
      m.params += times * t.elements;
      m.weights += times * s.weights;
      m.grads += times * (per_step_grads ? 0.0 : s.grads);
      m.optimizer += times * (s.master + s.moments);
    }
  };
  for (const ChunkInfo& c : stage_chunks(job, stage)) {
    const WorkRange range{layer_runs(job, c, c.layer_begin, c.layer_end), c.has_embedding,
                          c.has_head, c.mtp};
    for_each_parameter_group(
        job, range,
        [&add](const std::vector<ParamTensor>& group, int64_t times) { add(group, d(times)); });
  }
  return m;
}

}  // namespace podsim::strategies
