#include "strategies/memory.h"

#include <algorithm>

#include "strategies/model_counts.h"
#include "strategies/workload.h"

namespace podsim::strategies {
namespace {

double d(int64_t v) { return static_cast<double>(v); }

double saved_sum(const std::vector<Op>& ops) {
  double total = 0;
  for (const Op& op : ops) total += d(op.count) * (op.saved_bytes + op.saved_core_bytes);
  return total;
}

}  // namespace

LayerActivations layer_activations(const Job& job, const LayerKind& kind) {
  const RankShape r = rank_shape(job);
  LayerActivations a;
  for (const Op& op : layer_ops(job, kind, Pass::kForward)) {
    const double n = d(op.count);
    a.saved += n * op.saved_bytes;
    a.core += n * op.saved_core_bytes;
    if (op.kind == OpKind::kGemm && !op.attention_core) {
      a.weight_inputs += n * op.saved_bytes;
      a.output_grads += n * d(op.gemm.m) * d(op.gemm.n) * d(op.gemm.batch) * r.e;
    }
  }
  a.input = d(r.norm_tokens) * d(r.hidden) * r.e;
  return a;
}

LayerActivations layer_activations(const Job& job) {
  return layer_activations(job, typical_layer_kind(job));
}

double embedding_activation_bytes(const Job& job) {
  return saved_sum(embedding_ops(job, Pass::kForward));
}
double head_activation_bytes(const Job& job) { return saved_sum(head_ops(job, Pass::kForward)); }
double mtp_activation_bytes(const Job& job) { return saved_sum(mtp_ops(job, Pass::kForward)); }

double stored_activation_bytes(const Job& job, const ChunkInfo& chunk, int64_t layer_begin,
                               int64_t layer_end, bool embedding, bool head, int64_t mtp) {
  double total = 0;
  for (const LayerRun& run : layer_runs(job, chunk, layer_begin, layer_end)) {
    const LayerActivations a = layer_activations(job, run.kind);
    const double n = d(run.count);
    if (run.kind.full_recompute) {
      total += n * a.input;
      continue;
    }
    switch (job.plan.recompute.mode) {
      case RecomputeMode::kNone:
        total += n * a.full();
        break;
      case RecomputeMode::kSelective:
        total += n * a.saved;
        break;
      case RecomputeMode::kFull:
        total += n * a.input;
        break;
      case RecomputeMode::kEvery:
        break;  // below: checkpoints of the chunk's layer grid
    }
  }
  if (job.plan.recompute.mode == RecomputeMode::kEvery) {
    const int64_t c = job.plan.recompute.every_layers;
    const double input = layer_activations(job).input;
    for (int64_t l = layer_begin; l < layer_end; ++l) {
      if ((l - chunk.layer_begin) % c == 0) total += input;
    }
  }
  if (embedding) total += embedding_activation_bytes(job);
  if (head) total += head_activation_bytes(job);
  if (mtp > 0) total += d(mtp) * mtp_activation_bytes(job);
  return total;
}

double recompute_transient_bytes(const Job& job, const ChunkInfo& chunk, int64_t layer_begin,
                                 int64_t layer_end) {
  double largest = 0;
  for (const LayerRun& run : layer_runs(job, chunk, layer_begin, layer_end)) {
    const LayerActivations a = layer_activations(job, run.kind);
    double bytes = 0;
    if (run.kind.full_recompute) {
      bytes = a.full();
    } else {
      switch (job.plan.recompute.mode) {
        case RecomputeMode::kNone:
          break;
        case RecomputeMode::kSelective:
          bytes = a.core;
          break;
        case RecomputeMode::kFull:
          bytes = a.full();
          break;
        case RecomputeMode::kEvery:
          bytes = d(std::min(job.plan.recompute.every_layers, layer_end - layer_begin)) * a.full();
          break;
      }
    }
    largest = std::max(largest, bytes);
  }
  return largest;
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

double optimizer_bytes_per_param(const Job& job) {
  const bool mixed = job.training.precision != sim::NumberFormat::kFp32;
  const double state = job.training.optimizer == Optimizer::kAdam ? 8.0 : 4.0;
  return state + (mixed ? 4.0 : 0.0);
}

double optimizer_parameters(const Job& job, int64_t stage) {
  const StageParams p = stage_parameters(job, stage);
  if (job.plan.zero == 0) return p.total();
  return p.dense / d(shard_group_size(job)) + p.expert / d(expert_dp_size(job));
}

StaticMemory static_memory(const Job& job, int64_t stage) {
  const StageParams p = stage_parameters(job, stage);
  const double sharded = p.dense / d(shard_group_size(job)) + p.expert / d(expert_dp_size(job));
  const int zero = job.plan.zero;
  const bool grads_sharded = zero == 3 || (zero == 2 && zero2_reduces_every_micro_batch(job));
  StaticMemory m;
  m.params = p.total();
  m.weights = (zero == 3 ? sharded : p.total()) * weight_element_bytes(job);
  m.grads = (grads_sharded ? sharded : p.total()) * grad_element_bytes(job);
  m.optimizer = (zero >= 1 ? sharded : p.total()) * optimizer_bytes_per_param(job);
  return m;
}

}  // namespace podsim::strategies
