#include "strategies/model_counts.h"

#include "sim/to_double.h"
#include "strategies/workload.h"

namespace podsim::strategies {
namespace {

/// Parameters of one layer's attention in the whole model (`heads` query
/// heads, `kv` key/value heads), with the layer's norm weights.
struct LayerCounts {
  double params = 0;  ///< all parameters of the layer, biases included
  double matmul = 0;  ///< weights of matrix products one token uses
  double biases = 0;
  double expert = 0;  ///< routed-expert parameters (all of them)
};

LayerCounts attention_counts(const ModelShape& m, double heads, double kv) {
  const double h = d(m.hidden);
  LayerCounts c;
  if (m.attention.kind == AttentionKind::kMla) {
    const MlaShape& l = m.attention.mla;
    const double qk = d(l.qk_head_dim()), kv_up = d(l.qk_nope_head_dim + l.v_head_dim);
    double q = 0;
    if (l.q_lora_rank > 0) {
      const double r = d(l.q_lora_rank);
      q = h * r + r * heads * qk;  // down (replicated on TP ranks) + up
      c.params += r;               // latent norm
    } else {
      q = h * heads * qk;
    }
    const double r = d(l.kv_lora_rank);
    const double kv_proj = h * (r + d(l.qk_rope_head_dim)) + r * heads * kv_up;
    c.params += r;  // latent norm
    const double o = heads * d(l.v_head_dim) * h;
    c.matmul = q + kv_proj + o;
  } else {
    const double dh = d(head_dim(m));
    c.matmul = h * (heads + 2 * kv) * dh + heads * dh * h;
    if (uses_biases(m)) c.biases = (heads + 2 * kv) * dh + h;
  }
  c.params += c.matmul + c.biases + 2 * h;  // two norm weights
  if (uses_biases(m)) {
    c.biases += 2 * h;  // LayerNorm betas
    c.params += 2 * h;
  }
  return c;
}

/// The MLP of one layer: dense (ffn / tp columns per rank) or MoE (experts
/// / ep local experts of ffn / expert_tp, shared experts / tp, router whole).
LayerCounts mlp_counts(const ModelShape& m, bool moe, double tp, double ep, double etp,
                       bool active) {
  const double h = d(m.hidden);
  const double mats = m.mlp == MlpKind::kSwiglu ? 3 : 2;
  const double n1 = m.mlp == MlpKind::kSwiglu ? 2 : 1;
  const bool bias = uses_biases(m);
  LayerCounts c;
  if (!moe) {
    const double f = d(m.ffn_hidden) / tp;
    c.matmul = mats * h * f;
    if (bias) c.biases = n1 * f + h;
  } else {
    const MoeShape& e = *m.moe;
    const double shared = d(e.shared_experts) * d(e.ffn_hidden) / tp;
    const double routed = (active ? d(e.top_k) : d(e.experts) / ep) * d(e.ffn_hidden) / etp;
    const double router = h * d(e.experts);
    c.matmul = mats * h * (shared + (active ? routed : 0)) + router;
    c.expert = mats * h * (active ? 0 : routed);
    if (bias) {
      c.biases = d(e.shared_experts) * (n1 * d(e.ffn_hidden) / tp + h);
      c.expert += (active ? 0 : d(e.experts) / ep) * (n1 * d(e.ffn_hidden) / etp + h);
    }
  }
  c.params = c.matmul + c.biases + c.expert;
  return c;
}

LayerCounts whole_layer(const ModelShape& m, bool moe, bool active) {
  LayerCounts a = attention_counts(m, d(m.heads), d(kv_heads(m)));
  const LayerCounts f = mlp_counts(m, moe, 1, 1, 1, active);
  a.params += f.params;
  a.matmul += f.matmul;
  a.biases += f.biases;
  a.expert += f.expert;
  return a;
}

}  // namespace

ParamCount count_parameters(const ModelShape& m, int64_t seq_len) {
  ParamCount p;
  const double h = d(m.hidden);
  const bool bias = uses_biases(m);
  double layers = 0, layers_active = 0;
  for (int64_t l = 0; l < m.layers; ++l) {
    const bool moe = is_moe_layer(m, l);
    const LayerCounts all = whole_layer(m, moe, false);
    const LayerCounts act = whole_layer(m, moe, true);
    layers += all.params;
    layers_active += act.params;
    p.layers_matmul += act.matmul;
    p.biases += all.biases;
  }
  const bool typical_moe = m.moe.has_value() && dense_layer_count(m) * 2 <= m.layers;
  const LayerCounts typical = whole_layer(m, typical_moe, false);
  const LayerCounts typical_active = whole_layer(m, typical_moe, true);
  p.per_layer = typical.params;
  p.per_layer_active = typical_active.params;
  p.per_layer_matmul = typical_active.matmul;
  p.per_layer_biases = typical.biases;
  p.embedding = d(m.vocab) * h;
  p.positions = learned_positions(m) ? d(seq_len) * h : 0.0;
  p.final_norm = bias ? 2 * h : h;
  p.output = m.tied_embeddings ? 0.0 : d(m.vocab) * h;
  const double outer = p.embedding + p.positions + p.final_norm + p.output;
  p.total = layers + outer;
  p.active = layers_active + outer;
  p.biases += bias ? h : 0.0;
  if (m.mtp_layers > 0) {
    // eh_proj (2h -> h), the two input norms and the final norm, one layer.
    const LayerCounts layer = whole_layer(m, is_moe_layer(m, m.layers - 1), false);
    p.mtp = d(m.mtp_layers) * (2 * h * h + 3 * h + layer.params);
  }
  return p;
}

std::vector<ParamTensor> layer_parameter_tensors(const Job& job, const LayerKind& kind) {
  const RankShape r = rank_shape(job);
  const ModelShape& m = job.model;
  const double h = d(m.hidden);
  const bool swiglu = m.mlp == MlpKind::kSwiglu;
  std::vector<ParamTensor> t;
  // Column-parallel weights and biases are sharded; row-parallel biases and
  // norms are replicated across TP.
  auto add = [&](double elements, bool expert = false) { t.push_back({elements, expert}); };
  add(h);  // attention norm
  if (m.attention.kind == AttentionKind::kMla) {
    // Down-projections and latent norms replicated on the TP ranks,
    // up-projections and the output projection split by heads.
    const MlaShape& l = m.attention.mla;
    const double heads = d(r.heads), qk = d(l.qk_head_dim()), rk = d(l.kv_lora_rank);
    if (l.q_lora_rank > 0) {
      const double rq = d(l.q_lora_rank);
      add(h * rq);
      add(rq);
      add(rq * heads * qk);
    } else {
      add(h * heads * qk);
    }
    add(h * (rk + d(l.qk_rope_head_dim)));
    add(rk);
    add(rk * heads * d(l.qk_nope_head_dim + l.v_head_dim));
    add(heads * d(l.v_head_dim) * h);
  } else {
    const double dh = d(r.head_dim);
    const double qkv_out = d(r.heads + 2 * r.kv_heads) * dh;
    add(h * qkv_out);
    add(d(r.heads) * dh * h);
    if (r.biases) {
      add(qkv_out);
      add(h);
      add(2 * h);  // LayerNorm betas
    }
  }
  add(h);  // MLP norm
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
  if (kind.moe) {
    const MoeShape& e = *m.moe;
    add(h * d(e.experts));  // router
    for (int64_t s = 0; s < e.shared_experts; ++s) mlp(d(e.ffn_hidden) / d(r.tp), false);
    for (int64_t x = 0; x < e.experts / r.ep; ++x) mlp(d(e.ffn_hidden) / d(r.etp), true);
  } else {
    mlp(d(m.ffn_hidden) / d(r.tp), false);
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

std::vector<ParamTensor> mtp_parameter_tensors(const Job& job) {
  // Its layer, the 2h -> h projection (column-parallel), the two input norms
  // and its final norm.
  const RankShape r = rank_shape(job);
  const double h = d(r.hidden);
  std::vector<ParamTensor> t = layer_parameter_tensors(job, mtp_layer_kind(job));
  t.push_back({2 * h * h / d(r.tp), false});
  for (int i = 0; i < 3; ++i) t.push_back({h, false});
  return t;
}

void for_each_parameter_group(
    const Job& job, const WorkRange& range,
    const std::function<void(const std::vector<ParamTensor>& group, int64_t times)>& visit) {
  if (range.head) visit(head_parameter_tensors(job), 1);
  if (range.mtp > 0) {
    visit(mtp_parameter_tensors(job), range.mtp);
    // The shifted tokens' embedding (and the output layer, without the
    // head) need their own copy where the MTP sits apart from them.
    if (!range.embedding) visit({{d(rank_shape(job).vocab) * d(job.model.hidden), false}}, 1);
    if (!range.head) visit(head_parameter_tensors(job), 1);
  }
  for (auto run = range.runs.rbegin(); run != range.runs.rend(); ++run) {
    visit(layer_parameter_tensors(job, run->kind), run->count);
  }
  if (range.embedding) visit(embedding_parameter_tensors(job), 1);
}

std::vector<ParamTensor> range_parameter_tensors(const Job& job, const WorkRange& range) {
  std::vector<ParamTensor> t;
  for_each_parameter_group(job, range, [&t](const std::vector<ParamTensor>& group, int64_t times) {
    for (int64_t i = 0; i < times; ++i) t.insert(t.end(), group.begin(), group.end());
  });
  return t;
}

int64_t partitioned_parameter_tensors(const Job& job, const WorkRange& range) {
  const auto threshold = static_cast<double>(job.software.data_parallel.persist_below_params);
  int64_t partitioned = 0;
  for (const ParamTensor& t : range_parameter_tensors(job, range)) {
    if (!t.expert && t.elements >= threshold) ++partitioned;
  }
  return partitioned;
}

namespace {
StageParams sum(const std::vector<ParamTensor>& tensors) {
  StageParams p;
  for (const ParamTensor& t : tensors) (t.expert ? p.expert : p.dense) += t.elements;
  return p;
}
}  // namespace

StageParams layer_parameters(const Job& job, const LayerKind& kind) {
  return sum(layer_parameter_tensors(job, kind));
}
StageParams layer_parameters(const Job& job) {
  return layer_parameters(job, typical_layer_kind(job));
}
StageParams embedding_parameters(const Job& job) { return sum(embedding_parameter_tensors(job)); }
StageParams head_parameters(const Job& job) { return sum(head_parameter_tensors(job)); }
StageParams mtp_parameters(const Job& job) { return sum(mtp_parameter_tensors(job)); }
StageParams range_parameters(const Job& job, const WorkRange& range) {
  StageParams p;
  for_each_parameter_group(job, range, [&p](const std::vector<ParamTensor>& group, int64_t times) {
    const StageParams once = sum(group);
    p.dense += d(times) * once.dense;
    p.expert += d(times) * once.expert;
  });
  return p;
}

StageParams stage_parameters(const Job& job, int64_t stage) {
  StageParams p;
  for (const ChunkInfo& c : stage_chunks(job, stage)) {
    const WorkRange range{layer_runs(job, c, c.layer_begin, c.layer_end), c.has_embedding,
                          c.has_head, c.mtp};
    const StageParams q = range_parameters(job, range);
    p.dense += q.dense;
    p.expert += q.expert;
  }
  return p;
}

double stage_parameter_tensors(const Job& job, int64_t stage) {
  double tensors = 0;
  for (const ChunkInfo& c : stage_chunks(job, stage)) {
    const WorkRange range{layer_runs(job, c, c.layer_begin, c.layer_end), c.has_embedding,
                          c.has_head, c.mtp};
    for_each_parameter_group(job, range,
                             [&tensors](const std::vector<ParamTensor>& group, int64_t times) {
                               tensors += d(times) * d(static_cast<int64_t>(group.size()));
                             });
  }
  return tensors;
}

// ---- FLOP conventions ----------------------------------------------------------

namespace {
/// The job with every model-sharding degree at 1 (whole model, one replica).
Job unsharded(const Job& job) {
  Job u = job;
  u.plan.tp = u.plan.cp = u.plan.ep = u.plan.pp = u.plan.expert_tp = 1;
  u.plan.virtual_stages = 1;
  u.plan.sequence_parallel = false;
  return u;
}
double micro_batches_per_step(const Job& job) {
  return d(job.training.global_batch) / d(job.training.micro_batch);
}
}  // namespace

double model_flops_per_step(const Job& job) {
  Job u = unsharded(job);
  u.plan.layout.clear();
  u.plan.recompute.full_layers = 0;
  u.plan.schedule = PipelineSchedule::kOneFOneB;
  const ChunkInfo whole = model_chunks(u).front();
  const WorkRange range{layer_runs(u, whole, 0, u.model.layers), true, true, u.model.mtp_layers};
  const double per_micro = make_work(u, Pass::kForward, range).model_flops() +
                           make_work(u, Pass::kBackward, range).model_flops();
  return per_micro * micro_batches_per_step(job);
}

double hardware_flops_per_step(const Job& job) {
  // Every rank of a stage runs the same work; sum a representative per stage.
  const double ranks_per_stage = d(job.plan.dp * job.plan.tp * job.plan.cp);
  const double m = d(chunk_micro_batches(job));
  double total = 0;
  for (int64_t s = 0; s < job.plan.pp; ++s) {
    for (const ChunkInfo& c : stage_chunks(job, s)) {
      const WorkRange range{layer_runs(job, c, c.layer_begin, c.layer_end), c.has_embedding,
                            c.has_head, c.mtp};
      const auto work = [&](Pass p) { return make_work(job, p, range).matmul_flops(); };
      total += m * (work(Pass::kForward) + work(Pass::kBackward) + work(Pass::kRecompute));
    }
  }
  return total * ranks_per_stage;
}

double flops_6n_convention(const Job& job, bool include_embeddings, bool causal_halved) {
  const ModelShape& m = job.model;
  const ParamCount p = count_parameters(m, job.training.seq_len);
  double n = m.moe ? p.active : p.total;  // MTP modules are left out, as published
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
