#include "strategies/model_counts.h"

#include "strategies/workload.h"

namespace podsim::strategies {
namespace {

double d(int64_t v) { return static_cast<double>(v); }

}  // namespace

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

StageParams layer_parameters(const Job& job, const LayerKind& kind) {
  const RankShape r = rank_shape(job);
  const ModelShape& m = job.model;
  const double tp = d(r.tp);
  // Attention: column-parallel weights split by heads; MLA's down
  // projections, norms and row-parallel biases are replicated over TP.
  LayerCounts a;
  if (m.attention.kind == AttentionKind::kMla) {
    const MlaShape& l = m.attention.mla;
    const double h = d(m.hidden), heads = d(r.heads);
    const double qk = d(l.qk_head_dim()), kv_up = d(l.qk_nope_head_dim + l.v_head_dim);
    const double q = l.q_lora_rank > 0 ? h * d(l.q_lora_rank) + d(l.q_lora_rank) * (1 + heads * qk)
                                       : h * heads * qk;
    const double rk = d(l.kv_lora_rank);
    a.params = q + h * (rk + d(l.qk_rope_head_dim)) + rk * (1 + heads * kv_up) +
               heads * d(l.v_head_dim) * h + 2 * h;
  } else {
    const double h = d(m.hidden), dh = d(r.head_dim);
    const double qkv_out = d(r.heads + 2 * r.kv_heads) * dh;
    a.params = h * qkv_out + d(r.heads) * dh * h + 2 * h;
    if (r.biases) a.params += qkv_out + h + 2 * h;
  }
  const LayerCounts f = mlp_counts(m, kind.moe, tp, d(r.ep), d(r.etp), false);
  StageParams p;
  p.dense = a.params + f.matmul + f.biases;
  p.expert = f.expert;
  return p;
}

StageParams layer_parameters(const Job& job) {
  return layer_parameters(job, typical_layer_kind(job));
}

StageParams embedding_parameters(const Job& job) {
  const RankShape r = rank_shape(job);
  StageParams p;
  p.dense = d(r.vocab) * d(r.hidden) +
            (r.learned_positions ? d(job.training.seq_len) * d(r.hidden) : 0.0);
  return p;
}

StageParams head_parameters(const Job& job) {
  const RankShape r = rank_shape(job);
  StageParams p;
  p.dense = r.biases ? 2.0 * d(r.hidden) : d(r.hidden);
  // Tied embeddings share the table when it lives on the same stage; with
  // pp > 1 the last stage keeps its own copy (Megatron), kept in sync by an
  // all-reduce of the two copies' gradients.
  const bool shared = job.model.tied_embeddings && job.plan.pp == 1;
  if (!shared) p.dense += d(r.vocab) * d(r.hidden);
  return p;
}

StageParams mtp_parameters(const Job& job) {
  const RankShape r = rank_shape(job);
  const double h = d(r.hidden);
  StageParams p = layer_parameters(job, mtp_layer_kind(job));
  p.dense += 2 * h * h / d(r.tp) + 3 * h;
  return p;
}

StageParams range_parameters(const Job& job, const WorkRange& range) {
  StageParams p;
  auto add = [&p](const StageParams& q, double times) {
    p.dense += times * q.dense;
    p.expert += times * q.expert;
  };
  for (const LayerRun& run : range.runs) add(layer_parameters(job, run.kind), d(run.count));
  if (range.embedding) add(embedding_parameters(job), 1);
  if (range.head) add(head_parameters(job), 1);
  if (range.mtp > 0) {
    add(mtp_parameters(job), d(range.mtp));
    // The shifted tokens' embedding (and the output layer, without the
    // head) need their own copy where the MTP sits apart from them.
    if (!range.embedding) add({d(rank_shape(job).vocab) * d(job.model.hidden), 0}, 1);
    if (!range.head) add(head_parameters(job), 1);
  }
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
