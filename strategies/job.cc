#include "strategies/job.h"

#include <algorithm>
#include <array>
#include <optional>

#include "sim/ceil_div.h"

namespace podsim::strategies {
namespace {

std::string str(int64_t value) { return std::to_string(value); }

class Problems {
 public:
  void add(std::string path, std::string message, std::string hint = {}) {
    list_.push_back({std::move(path), std::move(message), std::move(hint)});
  }
  std::vector<PlanProblem> take() { return std::move(list_); }
  bool empty() const { return list_.empty(); }

 private:
  std::vector<PlanProblem> list_;
};

void check_model(const ModelShape& m, Problems& p) {
  if (m.layers < 1) p.add("/model/layers", "must be at least 1, got " + str(m.layers));
  if (m.hidden < 1) p.add("/model/hidden", "must be at least 1, got " + str(m.hidden));
  if (m.heads < 1) p.add("/model/heads", "must be at least 1, got " + str(m.heads));
  if (m.vocab < 1) p.add("/model/vocab", "must be at least 1, got " + str(m.vocab));
  if (!m.moe && m.ffn_hidden < 1) {
    p.add("/model/ffn_hidden", "must be at least 1, got " + str(m.ffn_hidden));
  }
  if (m.kv_heads < 0) p.add("/model/kv_heads", "must not be negative");
  if (m.head_dim < 0) p.add("/model/head_dim", "must not be negative");
  if (m.heads >= 1 && m.head_dim == 0 && m.hidden % m.heads != 0) {
    p.add("/model/head_dim",
          "hidden=" + str(m.hidden) + " is not divisible by heads=" + str(m.heads) +
              ", so head_dim cannot be derived",
          "give head_dim explicitly");
  }
  if (m.heads >= 1 && m.kv_heads > 0 && m.heads % m.kv_heads != 0) {
    p.add("/model/kv_heads", str(m.kv_heads) + " does not divide heads=" + str(m.heads),
          "grouped-query attention needs heads to be a multiple of kv_heads");
  }
  if (m.moe) {
    const MoeShape& e = *m.moe;
    if (e.experts < 1) p.add("/model/moe/experts", "must be at least 1");
    if (e.top_k < 1 || e.top_k > e.experts) {
      p.add("/model/moe/top_k", "must be between 1 and experts=" + str(e.experts));
    }
    if (e.ffn_hidden < 1) p.add("/model/moe/ffn_hidden", "must be at least 1");
    if (e.shared_experts < 0) p.add("/model/moe/shared_experts", "must not be negative");
    if (e.dense_layers < 0 || e.dense_layers > m.layers) {
      p.add("/model/moe/dense_layers", "must be between 0 and layers=" + str(m.layers));
    }
    if (e.interleave_step < 1) p.add("/model/moe/interleave_step", "must be at least 1");
    if (e.capacity_factor && !(*e.capacity_factor > 0)) {
      p.add("/model/moe/capacity_factor", "must be positive (or null: dropless)");
    }
    if (e.max_violation && !(*e.max_violation >= 0)) {
      p.add("/model/moe/max_violation", "must not be negative");
    }
    if (e.expert_groups < 1 || (e.experts >= 1 && e.experts % e.expert_groups != 0)) {
      p.add("/model/moe/expert_groups",
            str(e.expert_groups) + " does not divide experts=" + str(e.experts));
    } else if (e.groups_per_token < 0 || e.groups_per_token > e.expert_groups) {
      p.add("/model/moe/groups_per_token",
            "must be between 0 (no limit) and expert_groups=" + str(e.expert_groups));
    } else if (e.groups_per_token > 0 &&
               e.top_k > e.groups_per_token * (e.experts / e.expert_groups)) {
      p.add("/model/moe/groups_per_token", str(e.groups_per_token) + " groups of " +
                                               str(e.experts / e.expert_groups) +
                                               " experts cannot hold top_k=" + str(e.top_k));
    }
  }
  if (m.moe && dense_layer_count(m) > 0 && m.ffn_hidden < 1) {
    p.add("/model/ffn_hidden", "the dense layers of this MoE model need ffn_hidden >= 1");
  }
  const AttentionSpec& a = m.attention;
  if (a.kind == AttentionKind::kMla) {
    const MlaShape& l = a.mla;
    if (l.q_lora_rank < 0) p.add("/model/attention/q_lora_rank", "must not be negative");
    if (l.kv_lora_rank < 1) p.add("/model/attention/kv_lora_rank", "must be at least 1");
    if (l.qk_rope_head_dim < 0) p.add("/model/attention/qk_rope_head_dim", "must not be negative");
    if (l.qk_nope_head_dim < 1) p.add("/model/attention/qk_nope_head_dim", "must be at least 1");
    if (l.v_head_dim < 1) p.add("/model/attention/v_head_dim", "must be at least 1");
  }
  if (a.sliding_window < 0) p.add("/model/attention/sliding_window", "must not be negative");
  if (a.sliding_window_every < 1) {
    p.add("/model/attention/sliding_window_every", "must be at least 1");
  }
  if (m.mtp_layers < 0) p.add("/model/mtp_layers", "must not be negative");
}

void check_degrees(const ParallelPlan& plan, Problems& p) {
  const std::array<std::pair<const char*, int64_t>, 6> degrees{{{"dp", plan.dp},
                                                                {"tp", plan.tp},
                                                                {"pp", plan.pp},
                                                                {"cp", plan.cp},
                                                                {"ep", plan.ep},
                                                                {"expert_tp", plan.expert_tp}}};
  for (const auto& [name, value] : degrees) {
    if (value < 1) {
      p.add(std::string("/parallelism/") + name, "must be at least 1, got " + str(value));
    }
  }
}

void check_order(const ParallelPlan& plan, Problems& p) {
  std::array<int, kDims> seen{};
  for (Dim d : plan.order) {
    const auto i = static_cast<size_t>(d);
    if (i < seen.size()) ++seen[i];
  }
  if (std::any_of(seen.begin(), seen.end(), [](int n) { return n != 1; })) {
    p.add("/parallelism/order", "must name each of tp, cp, ep, dp, pp exactly once",
          "for example \"tp-cp-ep-dp-pp\"");
  }
}

void check_dualpipe(const Job& job, Problems& p) {
  const ParallelPlan& plan = job.plan;
  // dualpipe.py asserts num_ranks % 2 == 0, num_chunks % 2 == 0 and
  // num_chunks >= 2 * num_ranks (DualPipe repository, DualPipe.step).
  if (plan.pp < 2 || plan.pp % 2 != 0) {
    p.add("/parallelism/pp", "DualPipe needs an even number of stages, got pp=" + str(plan.pp));
  }
  if (plan.virtual_stages != 1) {
    p.add("/parallelism/pipeline/virtual_stages",
          "DualPipe places two stages per rank by itself; virtual_stages must be 1");
  }
  const int64_t m = micro_batches(job);
  if (m > 0 && (m % 2 != 0 || m < 2 * plan.pp)) {
    p.add("/training/global_batch",
          "DualPipe needs an even number of micro-batches per pipeline, at least 2*pp=" +
              str(2 * plan.pp) + "; got " + str(m),
          "half the micro-batches enter from each end (DualPipe repository)");
  }
}

void check_layout(const Job& job, Problems& p) {
  const std::vector<ChunkLayout>& layout = job.plan.layout;
  const int64_t chunks = model_chunk_count(job);
  const std::string path = "/parallelism/pipeline/layout";
  if (static_cast<int64_t>(layout.size()) != chunks) {
    p.add(path,
          "has " + str(static_cast<int64_t>(layout.size())) + " stages but the plan has " +
              str(chunks) + " model chunks (pp*virtual_stages)",
          "give one entry (or one '|'-separated stage) per model chunk");
    return;
  }
  int64_t layers = 0, mtp = 0;
  for (size_t i = 0; i < layout.size(); ++i) {
    const ChunkLayout& c = layout[i];
    if (c.layers < 0) p.add(path + "/" + std::to_string(i), "must not be negative");
    layers += c.layers;
    mtp += c.mtp;
    if (c.embedding && i != 0) {
      p.add(path, "the embedding (E) must be on the first model chunk");
    }
    if (c.loss && i + 1 != layout.size()) {
      p.add(path, "the loss (L) must be on the last model chunk");
    }
  }
  if (!layout.front().embedding) p.add(path, "the first model chunk must hold the embedding (E)");
  if (!layout.back().loss) p.add(path, "the last model chunk must hold the loss (L)");
  if (layers != job.model.layers) {
    p.add(path, "places " + str(layers) + " transformer layers but the model has " +
                    str(job.model.layers));
  }
  if (mtp != job.model.mtp_layers) {
    p.add(path, "places " + str(mtp) + " MTP modules (m) but model.mtp_layers is " +
                    str(job.model.mtp_layers));
  }
}

void check_plan(const Job& job, Problems& p) {
  const ModelShape& m = job.model;
  const ParallelPlan& plan = job.plan;
  const TrainingSetup& t = job.training;
  const int64_t kv = kv_heads(m);
  if (plan.tp > 1 && m.heads % plan.tp != 0) {
    p.add("/parallelism/tp", str(plan.tp) + " does not divide heads=" + str(m.heads));
  }
  if (plan.tp > 1 && kv % plan.tp != 0 && plan.tp % kv != 0) {
    p.add("/parallelism/tp",
          str(plan.tp) + " and kv_heads=" + str(kv) + " do not divide one another",
          "tp must divide kv_heads, or be a multiple of it (KV heads are then replicated)");
  }
  if (plan.tp > 1 && dense_layer_count(m) > 0 && m.ffn_hidden % plan.tp != 0) {
    p.add("/parallelism/tp", str(plan.tp) + " does not divide ffn_hidden=" + str(m.ffn_hidden));
  }
  if (plan.tp > 1 && m.moe && m.moe->shared_experts > 0 && m.moe->ffn_hidden % plan.tp != 0) {
    p.add("/parallelism/tp", str(plan.tp) + " does not divide moe.ffn_hidden=" +
                                 str(m.moe->ffn_hidden) + " (shared experts are TP-sharded)");
  }
  if (plan.expert_tp > 1 && m.moe && m.moe->ffn_hidden % plan.expert_tp != 0) {
    p.add("/parallelism/expert_tp",
          str(plan.expert_tp) + " does not divide moe.ffn_hidden=" + str(m.moe->ffn_hidden));
  }

  if (plan.cp > 1) {
    if (!job.options.flash_attention) {
      p.add("/options/flash_attention", "context parallelism needs flash attention",
            "set flash_attention to true or cp to 1");
    }
    const bool balanced = plan.context != ContextAlgorithm::kUlysses;
    const int64_t chunks = balanced ? 2 * plan.cp : plan.cp;
    if (t.seq_len % chunks != 0) {
      p.add("/parallelism/cp", "seq_len=" + str(t.seq_len) + " is not divisible by " + str(chunks) +
                                   (balanced ? " (2*cp chunks for causal load balancing)" : ""));
    }
    if (!balanced && plan.tp >= 1 && m.heads % plan.tp == 0) {
      const int64_t heads_t = m.heads / plan.tp;
      if (heads_t % plan.cp != 0) {
        p.add("/parallelism/context/algorithm",
              "ulysses needs heads/tp=" + str(heads_t) + " divisible by cp=" + str(plan.cp),
              "use the ring or all_gather algorithm");
      }
      const int64_t kv_t = std::max<int64_t>(1, kv / plan.tp);
      if (kv_t % plan.cp != 0 && plan.cp % kv_t != 0) {
        p.add("/parallelism/context/algorithm", "ulysses needs kv_heads/tp=" + str(kv_t) +
                                                    " and cp=" + str(plan.cp) +
                                                    " to divide one another");
      }
    }
  }
  if (plan.sequence_parallel && plan.tp > 1 && plan.cp >= 1 && t.seq_len % plan.cp == 0 &&
      (t.micro_batch * (t.seq_len / plan.cp)) % plan.tp != 0) {
    p.add("/parallelism/sequence_parallel",
          "tokens per rank (micro_batch*seq_len/cp) are not divisible by tp=" + str(plan.tp));
  }
  if (plan.ep > 1 && !m.moe) {
    p.add("/parallelism/ep", "expert parallelism needs a model with moe", "set ep to 1");
  }
  if (plan.expert_tp > 1 && !m.moe) {
    p.add("/parallelism/expert_tp", "expert tensor parallelism needs a model with moe",
          "set expert_tp to 1");
  }
  const int64_t stage_ranks = plan.tp * plan.cp * plan.dp;
  if ((plan.ep > 1 || plan.expert_tp > 1) && stage_ranks % (plan.ep * plan.expert_tp) != 0) {
    p.add("/parallelism/ep",
          "ep*expert_tp=" + str(plan.ep * plan.expert_tp) +
              " does not divide tp*cp*dp=" + str(stage_ranks),
          "MoE parallel folding regroups the tp*cp*dp ranks of a pipeline stage as expert_tp x "
          "ep x expert-data-parallel (Megatron-Core)");
  }
  if (m.moe && plan.ep >= 1 && m.moe->experts % plan.ep != 0) {
    p.add("/parallelism/ep", str(plan.ep) + " does not divide experts=" + str(m.moe->experts));
  }
  if (plan.zero < 0 || plan.zero > 3) {
    p.add("/parallelism/zero", "must be 0, 1, 2 or 3, got " + std::to_string(plan.zero));
  }
  if (plan.shard_group < 0) p.add("/parallelism/shard_group", "must not be negative");
  if (plan.shard_group > 0) {
    if ((plan.dp * plan.cp) % plan.shard_group != 0) {
      p.add("/parallelism/shard_group",
            str(plan.shard_group) + " does not divide dp*cp=" + str(plan.dp * plan.cp));
    }
    if (plan.zero == 0) {
      p.add("/parallelism/shard_group", "HSDP shard groups need sharding",
            "set zero to 1, 2 or 3, or drop shard_group");
    }
  }
  const int64_t v = plan.virtual_stages;
  if (v < 1) p.add("/parallelism/pipeline/virtual_stages", "must be at least 1");
  if (v > 1 && plan.schedule != PipelineSchedule::kInterleavedOneFOneB) {
    p.add("/parallelism/pipeline/virtual_stages",
          "virtual stages need the interleaved_1f1b schedule");
  }
  if (v > 1 && plan.pp == 1) {
    p.add("/parallelism/pipeline/virtual_stages",
          "virtual stages need pipeline parallelism (pp > 1): with pp=1 every chunk is on the "
          "same GPU",
          "set virtual_stages to 1, or pp > 1");
  }
  if (plan.schedule == PipelineSchedule::kInterleavedOneFOneB && plan.pp > 1 && v >= 1) {
    const int64_t m_count = micro_batches(job);
    if (m_count > 0 && m_count % plan.pp != 0) {
      p.add("/training/global_batch",
            "interleaved 1F1B needs the micro-batches per pipeline (" + str(m_count) +
                ") to be a multiple of pp=" + str(plan.pp),
            "Megatron's interleaved schedule runs micro-batches in groups of pp");
    }
  }
  if (plan.schedule == PipelineSchedule::kDualPipe) check_dualpipe(job, p);
  if (!plan.layout.empty()) {
    check_layout(job, p);
  } else if (v >= 1 && plan.pp >= 1 && m.layers >= 1 && m.layers < model_chunk_count(job)) {
    p.add("/parallelism/pp",
          "layers=" + str(m.layers) + " are fewer than the " + str(model_chunk_count(job)) +
              " model chunks; every model chunk needs a layer",
          "give an explicit /parallelism/pipeline/layout to have chunks without layers");
  }
  if (plan.recompute.full_layers < 0) {
    p.add("/parallelism/recompute_layers", "must not be negative");
  }
  if (plan.recompute.mode == RecomputeMode::kEvery && plan.recompute.every_layers < 1) {
    p.add("/parallelism/recompute/every", "must be at least 1");
  }
  if (job.options.fsdp_unit_layers < 1) {
    p.add("/options/fsdp_unit_layers", "must be at least 1");
  }
  if (job.options.dp_bucket_params < 0) {
    p.add("/options/dp_bucket_params", "must not be negative");
  }
}

}  // namespace

std::vector<PlanProblem> validate(const Job& job) {
  Problems p;
  check_model(job.model, p);
  check_degrees(job.plan, p);
  const TrainingSetup& t = job.training;
  if (t.seq_len < 1) p.add("/training/seq_len", "must be at least 1");
  if (t.micro_batch < 1) p.add("/training/micro_batch", "must be at least 1");
  if (t.global_batch < 1) p.add("/training/global_batch", "must be at least 1");
  if (!p.empty()) return p.take();  // the checks below divide by these
  check_order(job.plan, p);
  if (t.global_batch % (job.plan.dp * t.micro_batch) != 0) {
    p.add("/training/global_batch",
          str(t.global_batch) +
              " is not divisible by dp*micro_batch=" + str(job.plan.dp * t.micro_batch),
          "every data-parallel replica runs the same number of micro-batches");
  }
  check_plan(job, p);
  return p.take();
}

bool gpt_style(const ModelShape& model) {
  return model.norm == NormKind::kLayerNorm && model.mlp == MlpKind::kGelu;
}
bool uses_dropout(const ModelShape& model) { return gpt_style(model); }
bool uses_biases(const ModelShape& model) { return gpt_style(model); }
bool learned_positions(const ModelShape& model) { return gpt_style(model); }

int64_t head_dim(const ModelShape& model) {
  if (model.head_dim > 0) return model.head_dim;
  return model.heads > 0 ? model.hidden / model.heads : 0;
}
int64_t kv_heads(const ModelShape& model) {
  return model.kv_heads > 0 ? model.kv_heads : model.heads;
}

bool zero2_reduces_every_micro_batch(const Job& job) {
  return job.options.zero2_reduce_every_micro_batch.value_or(job.plan.pp == 1);
}

int64_t micro_batches(const Job& job) {
  const int64_t per = job.plan.dp * job.training.micro_batch;
  return per > 0 ? job.training.global_batch / per : 0;
}
int64_t chunk_micro_batches(const Job& job) {
  const int64_t m = micro_batches(job);
  return job.plan.schedule == PipelineSchedule::kDualPipe ? m / 2 : m;
}
int64_t grad_group_size(const Job& job) { return job.plan.dp * job.plan.cp; }
int64_t expert_dp_size(const Job& job) {
  return job.plan.tp * job.plan.cp * job.plan.dp / (job.plan.ep * job.plan.expert_tp);
}
int64_t shard_group_size(const Job& job) {
  return job.plan.shard_group > 0 ? job.plan.shard_group : grad_group_size(job);
}
double activation_element_bytes(const Job& job) {
  return job.training.precision == sim::NumberFormat::kFp32 ? 4.0 : 2.0;
}
double weight_element_bytes(const Job& job) { return activation_element_bytes(job); }
double grad_element_bytes(const Job& job) {
  return sim::bytes_per_element(job.options.grad_format);
}

bool is_moe_layer(const ModelShape& model, int64_t layer) {
  if (!model.moe) return false;
  const MoeShape& e = *model.moe;
  return layer >= e.dense_layers && (layer + 1) % e.interleave_step == 0;
}

bool is_sliding_layer(const ModelShape& model, int64_t layer) {
  const AttentionSpec& a = model.attention;
  return a.sliding_window > 0 && layer % a.sliding_window_every == 0;
}

int64_t dense_layer_count(const ModelShape& model) {
  int64_t dense = 0;
  for (int64_t l = 0; l < model.layers; ++l) {
    if (!is_moe_layer(model, l)) ++dense;
  }
  return dense;
}

LayerKind mtp_layer_kind(const Job& job) {
  const ModelShape& m = job.model;
  return {is_moe_layer(m, m.layers - 1), is_sliding_layer(m, m.layers - 1), false};
}

std::vector<LayerRun> layer_runs(const Job& job, const ChunkInfo& chunk, int64_t layer_begin,
                                 int64_t layer_end) {
  std::vector<LayerRun> runs;
  for (int64_t l = layer_begin; l < layer_end; ++l) {
    const LayerKind kind{is_moe_layer(job.model, l), is_sliding_layer(job.model, l),
                         l - chunk.layer_begin < job.plan.recompute.full_layers};
    if (!runs.empty() && runs.back().kind == kind) {
      ++runs.back().count;
    } else {
      runs.push_back({kind, 1});
    }
  }
  return runs;
}

int64_t chunks_per_stage(const Job& job) {
  return job.plan.schedule == PipelineSchedule::kDualPipe ? 2 : job.plan.virtual_stages;
}

int64_t model_chunk_count(const Job& job) {
  return job.plan.schedule == PipelineSchedule::kDualPipe ? job.plan.pp
                                                          : job.plan.pp * job.plan.virtual_stages;
}

std::vector<int64_t> chunk_layer_counts(const Job& job) {
  if (!job.plan.layout.empty()) {
    std::vector<int64_t> counts;
    for (const ChunkLayout& c : job.plan.layout) counts.push_back(c.layers);
    return counts;
  }
  const int64_t chunks = model_chunk_count(job);
  const int64_t q = ceil_div(job.model.layers, chunks);
  std::vector<int64_t> counts(static_cast<size_t>(chunks), q);
  int64_t surplus = q * chunks - job.model.layers;
  // Alternate first, last, second, second-to-last, ...; surplus < chunks, so
  // no chunk loses more than one layer.
  for (int64_t i = 0; surplus > 0; ++i) {
    const int64_t k = (i % 2 == 0) ? i / 2 : chunks - 1 - i / 2;
    --counts[static_cast<size_t>(k)];
    --surplus;
  }
  return counts;
}

namespace {

/// Model chunk `k` of `counts` (layer counts in model order) starting at
/// `layer_begin`.
ChunkInfo chunk_info(const Job& job, const std::vector<int64_t>& counts, size_t k,
                     int64_t layer_begin) {
  const bool dualpipe = job.plan.schedule == PipelineSchedule::kDualPipe;
  const std::vector<ChunkLayout>& layout = job.plan.layout;
  ChunkInfo c;
  c.model_chunk = static_cast<int64_t>(k);
  // DualPipe's rank r holds model chunk r as its first chunk; the second
  // chunks (the reverse direction) are listed by stage_chunks.
  c.stage = dualpipe ? c.model_chunk : c.model_chunk % job.plan.pp;
  c.virtual_index = dualpipe ? 0 : c.model_chunk / job.plan.pp;
  c.layer_begin = layer_begin;
  c.layer_end = layer_begin + counts[k];
  const bool last = k + 1 == counts.size();
  if (layout.empty()) {
    c.has_embedding = k == 0;
    c.has_head = last;
    c.mtp = last ? job.model.mtp_layers : 0;
  } else {
    c.has_embedding = layout[k].embedding;
    c.has_head = layout[k].loss;
    c.mtp = layout[k].mtp;
  }
  return c;
}

}  // namespace

std::vector<ChunkInfo> model_chunks(const Job& job) {
  const std::vector<int64_t> counts = chunk_layer_counts(job);
  std::vector<ChunkInfo> out;
  out.reserve(counts.size());
  int64_t layer = 0;
  for (size_t k = 0; k < counts.size(); ++k) {
    out.push_back(chunk_info(job, counts, k, layer));
    layer += counts[k];
  }
  return out;
}

std::vector<ChunkInfo> stage_chunks(const Job& job, int64_t stage) {
  // Only this stage's chunks are built: callers ask for every stage in turn,
  // and building all pp * v chunks each time made that quadratic in pp (a
  // sweep's bounds call it for tens of thousands of plans).
  const std::vector<int64_t> counts = chunk_layer_counts(job);
  const bool dualpipe = job.plan.schedule == PipelineSchedule::kDualPipe;
  const auto forward = static_cast<size_t>(stage);
  const auto reverse = static_cast<size_t>(job.plan.pp - 1 - stage);
  std::vector<ChunkInfo> out;
  std::optional<ChunkInfo> reversed;
  int64_t layer = 0;
  for (size_t k = 0; k < counts.size(); ++k) {
    if (dualpipe ? k == forward : static_cast<int64_t>(k) % job.plan.pp == stage) {
      out.push_back(chunk_info(job, counts, k, layer));
    }
    if (dualpipe && k == reverse) {
      reversed = chunk_info(job, counts, k, layer);
      reversed->stage = stage;
      reversed->virtual_index = 1;
    }
    layer += counts[k];
  }
  if (reversed) out.push_back(*reversed);
  return out;
}

}  // namespace podsim::strategies
