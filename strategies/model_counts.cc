#include "strategies/model_counts.h"

#include "strategies/workload.h"

namespace podsim::strategies {
namespace {

double d(int64_t v) { return static_cast<double>(v); }

}  // namespace

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

std::vector<ParamTensor> layer_parameter_tensors(const Job& job) {
  const RankShape r = rank_shape(job);
  const ModelShape& m = job.model;
  const double h = d(m.hidden);
  const double dh = d(r.head_dim);
  const double qkv_out = d(r.heads + 2 * r.kv_heads) * dh;
  const bool swiglu = m.mlp == MlpKind::kSwiglu;
  std::vector<ParamTensor> t;
  // Column-parallel weights and biases are sharded; row-parallel biases and
  // norms are replicated across TP.
  auto add = [&](double elements, bool expert = false) { t.push_back({elements, expert}); };
  add(h);  // attention norm
  add(h * qkv_out);
  add(d(r.heads) * dh * h);
  add(h);  // MLP norm
  if (r.biases) {
    add(qkv_out);
    add(h);
    add(2 * h);  // LayerNorm betas
  }
  // An MLP of width `ffn`: SwiGLU's gate and up projection (one tensor, as
  // Megatron and Transformer Engine fuse them) and the down projection.
  auto mlp = [&](double ffn, bool expert) {
    add((swiglu ? 2 : 1) * h * ffn, expert);
    add(ffn * h, expert);
    if (r.biases) {
      add((swiglu ? 2 : 1) * ffn, expert);
      add(h, expert);
    }
  };
  if (m.moe) {
    const MoeShape& e = *m.moe;
    const double ffn = d(e.ffn_hidden / r.tp);
    add(h * d(e.experts));  // router
    for (int64_t s = 0; s < e.shared_experts; ++s) mlp(ffn, false);
    for (int64_t x = 0; x < e.experts / r.ep; ++x) mlp(ffn, true);
  } else {
    mlp(d(r.ffn), false);
  }
  return t;
}

std::vector<ParamTensor> embedding_parameter_tensors(const Job& job) {
  const RankShape r = rank_shape(job);
  std::vector<ParamTensor> t{{d(r.vocab) * d(r.hidden), false}};
  if (r.learned_positions) t.push_back({d(job.training.seq_len) * d(r.hidden), false});
  return t;
}

std::vector<ParamTensor> head_parameter_tensors(const Job& job) {
  const RankShape r = rank_shape(job);
  std::vector<ParamTensor> t{{r.biases ? 2.0 * d(r.hidden) : d(r.hidden), false}};
  // Tied embeddings share the table when it lives on the same stage; with
  // pp > 1 the last stage keeps its own copy (Megatron), kept in sync by an
  // all-reduce of the two copies' gradients.
  const bool shared = job.model.tied_embeddings && job.plan.pp == 1;
  if (!shared) t.push_back({d(r.vocab) * d(r.hidden), false});
  return t;
}

namespace {
StageParams sum(const std::vector<ParamTensor>& tensors) {
  StageParams p;
  for (const ParamTensor& t : tensors) (t.expert ? p.expert : p.dense) += t.elements;
  return p;
}
}  // namespace

StageParams layer_parameters(const Job& job) { return sum(layer_parameter_tensors(job)); }
StageParams embedding_parameters(const Job& job) { return sum(embedding_parameter_tensors(job)); }
StageParams head_parameters(const Job& job) { return sum(head_parameter_tensors(job)); }

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
