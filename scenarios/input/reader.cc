#include "scenarios/input/reader.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>

#include "scenarios/input/checker.h"
#include "scenarios/input/schema.h"
#include "scenarios/input/spec_builder.h"
#include "strategies/pipeline_layout.h"

namespace podsim::scenarios {

using nlohmann::json;

namespace reader_detail {

hwmodels::ClusterSpec SpecBuilder::build_cluster_only() {
  hwmodels::ClusterSpec cluster;
  build_cluster(cluster);
  return cluster;
}

ScenarioSpec SpecBuilder::build(const std::string& default_name) {
  ScenarioSpec spec;
  spec.name = text("/name").value_or(default_name);
  build_model(spec.model);
  build_cluster(spec.cluster);
  build_training(spec.training);
  build_plan(spec.plan);
  build_options(spec);
  build_run(spec);
  build_software(spec.software);
  // Unset, gradients accumulate and travel in the format the framework
  // reduces them in.
  if (!text("/options/grad_format")) {
    spec.options.grad_format = spec.software.data_parallel.reduce_format;
  }
  shard_tp_activations(spec);
  software_overlaps(spec);
  problems_before_job_checks_ = problems_.size();
  check_job(spec);
  build_degraded(spec);
  check_plausible(spec);
  spec.warnings = std::move(warnings_);
  return spec;
}

void SpecBuilder::shard_tp_activations(ScenarioSpec& s) {
  strategies::ParallelPlan& p = s.plan;
  if (!s.software.tp_shards_activations || p.tp <= 1 || p.sequence_parallel) return;
  const std::string why = "software '" + s.software.name +
                          "' keeps activations sharded across the tensor-parallel group "
                          "(software.tensor_parallel.shard_activations)";
  const int64_t tokens_per_cp_rank = p.cp > 0 ? s.training.seq_len / p.cp : 0;
  if (tokens_per_cp_rank > 0 && tokens_per_cp_rank % p.tp == 0) {
    p.sequence_parallel = true;
    warn(why + ": the plan runs with sequence_parallel true");
  } else {
    warn(why + ", but seq_len/cp does not split across tp=" + std::to_string(p.tp) +
         ": simulated with the activations replicated");
  }
}

void SpecBuilder::software_overlaps(ScenarioSpec& s) {
  strategies::ScheduleOptions& o = s.options;
  const std::string software = "software '" + s.software.name + "'";
  // Megatron-LM of 2021 waits for every send and receive and then
  // synchronises the device: nothing runs beside a pipeline transfer.
  if (o.overlap_pp && s.software.p2p == strategies::P2pMode::kBlockingSync) {
    o.overlap_pp = false;
    if (given("/options/overlap/pp") && s.plan.pp > 1) {
      warn("options.overlap.pp: " + software +
           " waits for every pipeline transfer and synchronises (software.pipeline.p2p "
           "blocking_sync): its sends block compute");
    }
  }
  // The layer's op lists honour both conditions below whatever the plan
  // (strategies::ops, a sweep's plans too); this says so for the scenario's.
  if (!o.overlap_tp) return;
  if (s.software.tp_overlap == strategies::TpOverlap::kNone) {
    o.overlap_tp = false;
    if (s.plan.tp > 1) {
      warn("options.overlap.tp: " + software +
           " has no tensor-parallel communication overlap (software.tp_overlap.method none): "
           "its TP collectives block compute");
    }
  } else if (s.plan.tp > 1 && !s.plan.sequence_parallel) {
    warn("options.overlap.tp: " + software +
         "'s TP overlap works on the all-gathers and reduce-scatters of sequence parallelism, "
         "which the plan leaves off: its TP all-reduces block compute");
  }
}

void SpecBuilder::build_degraded(ScenarioSpec& s) {
  DegradedParts& d = s.degraded;
  auto rank = [&](const std::string& path) -> int64_t {
    const std::optional<int64_t> r = integer(path);
    if (!r) return -1;
    if (s.gpus > 0 && *r >= s.gpus) {
      problem(
          path,
          "rank " + std::to_string(*r) + " is not in the job (" + std::to_string(s.gpus) + " GPUs)",
          "give a rank from 0 to " + std::to_string(s.gpus - 1));
      return -1;
    }
    return *r;
  };
  if (usable("/degraded/gpu")) {
    d.slow_gpu_rank = rank("/degraded/gpu/rank");
    d.gpu_slowdown = number("/degraded/gpu/slowdown").value_or(1);
  }
  if (usable("/degraded/nic")) {
    d.slow_nic_rank = rank("/degraded/nic/rank");
    d.nic_rate_fraction = number("/degraded/nic/rate_fraction").value_or(1);
  }
}

void SpecBuilder::problem(const std::string& path, std::string message, std::string hint) {
  add_problem(problems_, {prefix_ + path, std::move(message), std::move(hint)});
}

void SpecBuilder::warn(std::string message) { warnings_.push_back(std::move(message)); }

void SpecBuilder::build_model(strategies::ModelShape& m) {
  m.name = text("/model/name").value_or(preset_name("/model"));
  m.source = text("/model/source").value_or("");
  layers_ = integer("/model/layers");
  hidden_ = integer("/model/hidden");
  ffn_ = integer("/model/ffn_hidden");
  heads_ = integer("/model/heads");
  m.layers = layers_.value_or(0);
  m.hidden = hidden_.value_or(0);
  m.ffn_hidden = ffn_.value_or(0);
  m.heads = heads_.value_or(0);
  m.vocab = integer("/model/vocab").value_or(0);
  kv_heads_ = given("/model/kv_heads") ? integer("/model/kv_heads") : heads_;
  m.kv_heads = kv_heads_.value_or(0);
  if (given("/model/head_dim")) {
    m.head_dim = integer("/model/head_dim").value_or(0);
  } else if (hidden_ && heads_) {
    if (*hidden_ % *heads_ == 0) {
      m.head_dim = *hidden_ / *heads_;
    } else {
      problem("/model/heads",
              "hidden=" + num(*hidden_) + " is not divisible by heads=" + num(*heads_) +
                  ", so head_dim cannot default to hidden/heads",
              "give /model/head_dim, or heads dividing hidden (" + divisors_text(*hidden_) + ")");
    }
  }
  if (heads_ && kv_heads_ && *heads_ % *kv_heads_ != 0) {
    problem("/model/kv_heads",
            "kv_heads=" + num(*kv_heads_) + " does not divide heads=" + num(*heads_),
            "grouped-query attention shares each KV head among heads/kv_heads query heads: use " +
                divisors_text(*heads_));
  }
  const std::string mlp = text("/model/mlp").value_or("swiglu");
  m.mlp = mlp == "gelu" ? strategies::MlpKind::kGelu : strategies::MlpKind::kSwiglu;
  const std::string norm = text("/model/norm").value_or("rmsnorm");
  m.norm = norm == "layernorm" ? strategies::NormKind::kLayerNorm : strategies::NormKind::kRmsNorm;
  m.tied_embeddings = flag("/model/tied_embeddings").value_or(false);
  m.clamped_glu = flag("/model/clamped_glu").value_or(false);
  if (m.clamped_glu && m.mlp != strategies::MlpKind::kSwiglu) {
    problem("/model/clamped_glu",
            "a clamped GLU needs a gated MLP, and /model/mlp is \"" + mlp + "\"",
            "set /model/mlp to \"swiglu\", or drop /model/clamped_glu");
  }
  if (usable("/model/moe")) {
    strategies::MoeShape moe;
    moe.experts = integer("/model/moe/experts").value_or(0);
    moe.top_k = integer("/model/moe/top_k").value_or(0);
    moe.ffn_hidden = given("/model/moe/ffn_hidden") ? integer("/model/moe/ffn_hidden").value_or(0)
                                                    : m.ffn_hidden;
    moe.shared_experts = integer("/model/moe/shared_experts").value_or(0);
    if (moe.experts > 0 && moe.top_k > moe.experts) {
      problem("/model/moe/top_k",
              "top_k=" + num(moe.top_k) + " exceeds experts=" + num(moe.experts),
              "a token can be routed to at most every expert: use top_k <= " + num(moe.experts));
    }
    moe.dense_layers = integer("/model/moe/dense_layers").value_or(0);
    moe.interleave_step = integer("/model/moe/interleave_step").value_or(1);
    if (layers_ && moe.dense_layers > *layers_) {
      problem("/model/moe/dense_layers",
              "dense_layers=" + num(moe.dense_layers) + " exceeds layers=" + num(*layers_),
              "use 0 .. " + num(*layers_));
    }
    moe.load_balance = text("/model/moe/load_balance").value_or("learned") == "forced"
                           ? strategies::LoadBalance::kForced
                           : strategies::LoadBalance::kLearned;
    moe.capacity_factor = number("/model/moe/capacity_factor");
    moe.balancing = text("/model/moe/balancing").value_or("aux_loss") == "loss_free"
                        ? strategies::RouterBalancing::kLossFree
                        : strategies::RouterBalancing::kAuxLoss;
    moe.max_violation = number("/model/moe/max_violation");
    moe.expert_groups = integer("/model/moe/expert_groups").value_or(1);
    moe.groups_per_token = integer("/model/moe/groups_per_token").value_or(0);
    moe.router_fp32 = flag("/model/moe/router_fp32").value_or(false);
    if (moe.experts > 0 && moe.experts % moe.expert_groups != 0) {
      problem("/model/moe/expert_groups",
              "expert_groups=" + num(moe.expert_groups) +
                  " does not divide experts=" + num(moe.experts),
              "choose from " + divisors_text(moe.experts));
    } else if (moe.groups_per_token > moe.expert_groups) {
      problem("/model/moe/groups_per_token",
              "groups_per_token=" + num(moe.groups_per_token) +
                  " exceeds expert_groups=" + num(moe.expert_groups),
              "use 0 (no limit) .. " + num(moe.expert_groups));
    }
    m.moe = moe;
  }
  build_attention(m);
  m.mtp_layers = integer("/model/mtp_layers").value_or(0);
}

void SpecBuilder::build_attention(strategies::ModelShape& m) {
  strategies::AttentionSpec& a = m.attention;
  const std::string kind = text("/model/attention/kind").value_or("gqa");
  a.kind = kind == "mla"   ? strategies::AttentionKind::kMla
           : kind == "mha" ? strategies::AttentionKind::kMha
                           : strategies::AttentionKind::kGqa;
  a.sliding_window = integer("/model/attention/sliding_window").value_or(0);
  a.sliding_window_every = integer("/model/attention/sliding_window_every").value_or(1);
  if (kind == "mha" && kv_heads_ && heads_ && *kv_heads_ != *heads_) {
    problem("/model/attention/kind",
            "mha gives every head its own keys and values, but kv_heads=" + num(*kv_heads_) +
                " differs from heads=" + num(*heads_),
            "use kind \"gqa\", or set kv_heads to heads");
  }
  strategies::MlaShape& l = a.mla;
  l.q_lora_rank = integer("/model/attention/q_lora_rank").value_or(0);
  l.kv_lora_rank = integer("/model/attention/kv_lora_rank").value_or(0);
  l.qk_rope_head_dim = integer("/model/attention/qk_rope_head_dim").value_or(0);
  l.qk_nope_head_dim = integer("/model/attention/qk_nope_head_dim").value_or(0);
  l.v_head_dim = integer("/model/attention/v_head_dim").value_or(0);
  if (!given("/model/attention/sliding_window") && given("/model/attention/sliding_window_every")) {
    warn(
        "model.attention.sliding_window_every: no sliding_window is given, so every layer "
        "attends to the whole sequence (the key is ignored)");
  }
  if (a.kind != strategies::AttentionKind::kMla) {
    std::string mla_keys;
    for (const char* key :
         {"q_lora_rank", "kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim"}) {
      if (!given(std::string("/model/attention/") + key)) continue;
      mla_keys += (mla_keys.empty() ? "" : ", ") + std::string(key);
    }
    if (!mla_keys.empty()) {
      warn("model.attention: " + mla_keys +
           " describe multi-head latent attention, but kind is \"" + kind +
           "\": ignored (kind \"mla\" uses them)");
    }
    return;
  }
  const std::pair<const char*, int64_t> needed[] = {{"kv_lora_rank", l.kv_lora_rank},
                                                    {"qk_nope_head_dim", l.qk_nope_head_dim},
                                                    {"v_head_dim", l.v_head_dim}};
  for (const auto& [key, value] : needed) {
    if (value < 1 && !doc_.bad.contains(std::string("/model/attention/") + key)) {
      problem(std::string("/model/attention/") + key, std::string("MLA needs a positive ") + key,
              "DeepSeek-V3: kv_lora_rank 512, qk_nope_head_dim 128, v_head_dim 128");
    }
  }
}

void SpecBuilder::build_training(strategies::TrainingSetup& t) {
  seq_len_ = integer("/training/seq_len");
  global_batch_ = integer("/training/global_batch");
  micro_batch_ = integer("/training/micro_batch");
  t.seq_len = seq_len_.value_or(0);
  t.global_batch = global_batch_.value_or(0);
  t.micro_batch = micro_batch_.value_or(1);
  precision_ = text("/training/precision").value_or("bf16");
  if (precision_ == "fp16") {
    t.precision = sim::NumberFormat::kFp16;
  } else if (precision_ == "fp8") {
    t.precision = sim::NumberFormat::kFp8;
  } else if (precision_ == "fp32") {
    t.precision = sim::NumberFormat::kFp32;
  } else if (precision_ == "int8") {
    t.precision = sim::NumberFormat::kInt8;
  } else if (precision_ == "fp4") {
    t.precision = sim::NumberFormat::kFp4;
  } else {
    t.precision = sim::NumberFormat::kBf16;
  }
  const std::optional<std::string> recipe = text("/training/precision_recipe");
  recipe_ = recipe.value_or("");
  const std::pair<const char*, strategies::PrecisionRecipe> recipes[] = {
      {"delayed", strategies::PrecisionRecipe::kDelayed},
      {"tensorwise", strategies::PrecisionRecipe::kTensorwise},
      {"blockwise", strategies::PrecisionRecipe::kBlockwise},
      {"mxfp8", strategies::PrecisionRecipe::kMxfp8},
      {"nvfp4", strategies::PrecisionRecipe::kNvfp4},
      {"aqt-int8", strategies::PrecisionRecipe::kAqtInt8},
      {"fp8_full", strategies::PrecisionRecipe::kFp8Full}};
  t.recipe = pick(recipe, recipes, t.recipe);
  // NVFP4 is the one fp4 recipe (Megatron's Fp4Recipe {nvfp4, custom}).
  if (t.precision == sim::NumberFormat::kFp4 && recipe_.empty()) {
    t.recipe = strategies::PrecisionRecipe::kNvfp4;
  }
  t.optimizer = text("/training/optimizer").value_or("adam") == "sgd"
                    ? strategies::Optimizer::kSgd
                    : strategies::Optimizer::kAdam;
}

void SpecBuilder::build_plan(strategies::ParallelPlan& p) {
  dp_ = integer("/parallelism/dp");
  tp_ = integer("/parallelism/tp");
  pp_ = integer("/parallelism/pp");
  cp_ = integer("/parallelism/cp");
  ep_ = integer("/parallelism/ep");
  p.dp = dp_.value_or(1);
  p.tp = tp_.value_or(1);
  p.pp = pp_.value_or(1);
  p.cp = cp_.value_or(1);
  p.ep = ep_.value_or(1);
  p.sequence_parallel = flag("/parallelism/sequence_parallel").value_or(false);
  p.zero = static_cast<int>(integer("/parallelism/zero").value_or(0));
  p.shard_group = given("/parallelism/shard_group")
                      ? integer("/parallelism/shard_group").value_or(0)
                      : 0;  // 0 = all of dp (ParallelPlan's convention)
  expert_tp_ = integer("/parallelism/expert_tp");
  p.expert_tp = expert_tp_.value_or(1);
  const std::string schedule = text("/parallelism/pipeline/schedule").value_or("1f1b");
  if (schedule == "gpipe") {
    p.schedule = strategies::PipelineSchedule::kGpipe;
  } else if (schedule == "interleaved_1f1b") {
    p.schedule = strategies::PipelineSchedule::kInterleavedOneFOneB;
  } else if (schedule == "zero_bubble") {
    p.schedule = strategies::PipelineSchedule::kZeroBubble;
  } else if (schedule == "dualpipe") {
    p.schedule = strategies::PipelineSchedule::kDualPipe;
  } else {
    p.schedule = strategies::PipelineSchedule::kOneFOneB;
  }
  schedule_ = schedule;
  virtual_stages_ = integer("/parallelism/pipeline/virtual_stages");
  p.virtual_stages = virtual_stages_.value_or(1);
  build_layout(p);
  p.recompute.full_layers = integer("/parallelism/recompute_layers").value_or(0);
  const auto modules = doc_.array_sizes.find("/parallelism/recompute_modules");
  if (modules != doc_.array_sizes.end()) {
    for (size_t i = 0; i < modules->second; ++i) {
      const std::string path = "/parallelism/recompute_modules/" + std::to_string(i);
      const std::optional<std::string> module = text(path);
      if (!module) continue;  // a bad value: the checker has said so
      const std::pair<const char*, strategies::RecomputeModule> names[] = {
          {"core_attn", strategies::RecomputeModule::kCoreAttn},
          {"mlp", strategies::RecomputeModule::kMlp},
          {"moe", strategies::RecomputeModule::kMoe},
          {"moe_act", strategies::RecomputeModule::kMoeAct},
          {"layernorm", strategies::RecomputeModule::kLayerNorm},
          {"mla_up_proj", strategies::RecomputeModule::kMlaUpProj},
          {"shared_experts", strategies::RecomputeModule::kSharedExperts}};
      p.recompute.modules |= strategies::module_bit(pick(module, names, names[0].second));
    }
  }
  build_offload(p);
  const std::string context = text("/parallelism/context/algorithm").value_or("ring");
  p.context = context == "ulysses"      ? strategies::ContextAlgorithm::kUlysses
              : context == "all_gather" ? strategies::ContextAlgorithm::kAllGather
                                        : strategies::ContextAlgorithm::kRing;
  context_ = context;
  if (usable("/parallelism/recompute") && !doc_.values.contains("/parallelism/recompute")) {
    // The object form {"every": C}.
    p.recompute.mode = strategies::RecomputeMode::kEvery;
    p.recompute.every_layers = integer("/parallelism/recompute/every").value_or(0);
    if (layers_ && p.recompute.every_layers > *layers_) {
      problem("/parallelism/recompute/every",
              "every=" + num(p.recompute.every_layers) + " exceeds layers=" + num(*layers_),
              "checkpoint every C layers with 1 <= C <= " + num(*layers_));
    }
  } else {
    const std::string mode = text("/parallelism/recompute").value_or("none");
    p.recompute.mode = mode == "selective" ? strategies::RecomputeMode::kSelective
                       : mode == "full"    ? strategies::RecomputeMode::kFull
                                           : strategies::RecomputeMode::kNone;
  }
  // Megatron reads --recompute-modules only with --recompute-granularity
  // selective (transformer_config.py): a module list is a selective
  // recompute, and meaningless beside full recompute. MaxText's offload list
  // is a remat policy of its own.
  const bool policy_given = p.recompute.modules != 0 || p.activation_offload != 0;
  if (policy_given && p.recompute.mode == strategies::RecomputeMode::kNone) {
    p.recompute.mode = strategies::RecomputeMode::kSelective;
  } else if (p.recompute.modules != 0 &&
             p.recompute.mode != strategies::RecomputeMode::kSelective) {
    warn("parallelism.recompute_modules applies to selective recompute only; ignored beside " +
         std::string(p.recompute.mode == strategies::RecomputeMode::kFull ? "full" : "every-C") +
         " recompute");
    p.recompute.modules = 0;
  }
  const std::string order = text("/parallelism/order").value_or("tp-cp-ep-dp-pp");
  size_t index = 0;
  size_t start = 0;
  while (start < order.size() && index < p.order.size()) {
    size_t dash = order.find('-', start);
    if (dash == std::string::npos) dash = order.size();
    const std::string part = order.substr(start, dash - start);
    p.order[index++] = part == "tp"   ? strategies::Dim::kTp
                       : part == "cp" ? strategies::Dim::kCp
                       : part == "ep" ? strategies::Dim::kEp
                       : part == "dp" ? strategies::Dim::kDp
                                      : strategies::Dim::kPp;
    start = dash + 1;
  }
}

void SpecBuilder::build_offload(strategies::ParallelPlan& p) {
  const auto size = doc_.array_sizes.find("/parallelism/activation_offload");
  if (size == doc_.array_sizes.end()) return;
  using strategies::offload_bit;
  using strategies::OffloadTensor;
  const std::pair<const char*, uint32_t> names[] = {
      {"decoder_layer_input", offload_bit(OffloadTensor::kDecoderLayerInput)},
      {"query_proj", offload_bit(OffloadTensor::kQueryProj)},
      {"key_proj", offload_bit(OffloadTensor::kKeyProj)},
      {"value_proj", offload_bit(OffloadTensor::kValueProj)},
      {"qkv_proj", offload_bit(OffloadTensor::kQkvProj)},
      {"context", offload_bit(OffloadTensor::kContext)},
      {"out_proj", offload_bit(OffloadTensor::kOutProj)},
      {"mlpwi", offload_bit(OffloadTensor::kMlpWi0) | offload_bit(OffloadTensor::kMlpWi1)},
      {"mlpwi_0", offload_bit(OffloadTensor::kMlpWi0)},
      {"mlpwi_1", offload_bit(OffloadTensor::kMlpWi1)},
      {"mlpwo", offload_bit(OffloadTensor::kMlpWo)}};
  for (size_t i = 0; i < size->second; ++i) {
    const std::optional<std::string> tensor =
        text("/parallelism/activation_offload/" + std::to_string(i));
    if (tensor) p.activation_offload |= pick(tensor, names, uint32_t{0});
  }
}

void SpecBuilder::build_layout(strategies::ParallelPlan& p) {
  const std::string path = "/parallelism/pipeline/layout";
  if (!usable(path)) return;
  if (const std::optional<std::string> layout = text(path)) {
    if (*layout == strategies::kAsymEmbedLossLayout) {
      // Resolved once the layer count and the chunk count are known
      // (check_layout): Megatron's account_for_embedding/loss_in_pipeline_split.
      asym_embed_loss_ = true;
      layout_given_ = true;
      return;
    }
    strategies::ParsedLayout parsed = strategies::parse_pipeline_layout(*layout);
    if (!parsed.error.empty()) {
      problem(path, quote_for_message(*layout) + ": " + parsed.error,
              "Megatron's layout: E embedding, t transformer layer, m MTP, L loss, | between "
              "stages, x*n and (...)*n repeat, e.g. \"Et|(tt|)*30L\"");
      return;
    }
    p.layout = std::move(parsed.chunks);
    layout_given_ = true;
    return;
  }
  const auto size = doc_.array_sizes.find(path);
  if (size == doc_.array_sizes.end()) return;
  std::vector<int64_t> counts;
  for (size_t i = 0; i < size->second; ++i) {
    const std::optional<int64_t> n = integer(path + "/" + std::to_string(i));
    if (!n) return;
    counts.push_back(*n);
  }
  p.layout = strategies::layout_from_counts(counts, integer("/model/mtp_layers").value_or(0));
  layout_given_ = true;
}

void SpecBuilder::build_options(ScenarioSpec& s) {
  s.options.overlap_dp = flag("/options/overlap/dp").value_or(true);
  s.options.overlap_tp = flag("/options/overlap/tp").value_or(false);
  s.options.overlap_pp = flag("/options/overlap/pp").value_or(true);
  s.options.overlap_cp = flag("/options/overlap/cp").value_or(true);
  s.options.flash_attention = flag("/options/flash_attention").value_or(true);
  s.options.dp_bucket_params = integer("/options/dp_bucket_params").value_or(0);
  s.options.fsdp_unit_layers = integer("/options/fsdp_unit_layers").value_or(1);
  if (const std::optional<std::string> grads = text("/options/grad_format")) {
    s.options.grad_format = *grads == "bf16" ? sim::NumberFormat::kBf16 : sim::NumberFormat::kFp32;
  }
  s.options.zero2_reduce_every_micro_batch = flag("/options/zero2_reduce_every_micro_batch");
  strategies::MoeRuntime& moe = s.options.moe;
  moe.dispatcher = text("/options/moe/dispatcher").value_or("alltoall") == "fused"
                       ? strategies::MoeDispatcher::kFusedAllToAll
                       : strategies::MoeDispatcher::kAllToAll;
  moe.shared_expert_overlap = flag("/options/moe/shared_expert_overlap").value_or(false);
  moe.dispatch_format = text("/options/moe/dispatch_format").value_or("bf16") == "fp8"
                            ? sim::NumberFormat::kFp8
                            : sim::NumberFormat::kBf16;
  moe.dispatch_sms = integer("/options/moe/dispatch_sms").value_or(0);
  s.mode = text("/options/simulation").value_or("symmetric") == "every_rank"
               ? SimulationMode::kEveryRank
               : SimulationMode::kSymmetric;
}

}  // namespace reader_detail

using reader_detail::SpecBuilder;

Result<ScenarioSpec> read_scenario_json(const json& scenario, const ReadOptions& options,
                                        const std::string& path_prefix) {
  const PresetLibrary& presets = options.presets ? *options.presets : builtin_presets();
  std::vector<Problem> problems;
  const Checker checker(scenario_keys(), presets, path_prefix);
  const CheckedDocument doc = checker.check(scenario, problems);
  if (!scenario.is_object()) return problems;
  SpecBuilder builder(doc, path_prefix, problems);
  ScenarioSpec spec = builder.build(options.default_name);
  if (options.plan_problems_as_warnings) {
    // The job checks' problems with the plan itself (its degrees, their
    // product, the micro-batch) are set aside; the rest still fail the read.
    auto about_plan = [&](const std::string& path) {
      const std::string local = path.substr(std::min(path.size(), path_prefix.size()));
      return local == "/gpus" || local.rfind("/parallelism", 0) == 0 ||
             local == "/training/micro_batch";
    };
    std::vector<Problem> kept;
    for (size_t i = 0; i < problems.size(); ++i) {
      const bool set_aside =
          i >= builder.problems_before_job_checks() && about_plan(problems[i].path);
      (set_aside ? spec.plan_problems : kept).push_back(problems[i]);
    }
    problems = std::move(kept);
  }
  if (!problems.empty()) return problems;
  return spec;
}

Result<hwmodels::ClusterSpec> read_cluster_json(const json& cluster, const ReadOptions& options) {
  const PresetLibrary& presets = options.presets ? *options.presets : builtin_presets();
  std::vector<Problem> problems;
  const Checker checker(scenario_keys(), presets, "");
  const CheckedDocument doc = checker.check_subtree(cluster, "/cluster", problems);
  SpecBuilder builder(doc, "", problems);
  hwmodels::ClusterSpec spec = builder.build_cluster_only();
  if (!problems.empty()) return problems;
  return spec;
}

Result<ScenarioSpec> read_scenario_text(std::string_view text, const ReadOptions& options) {
  Result<json> parsed = parse_json_text(text, options.limits);
  if (!parsed.ok()) return parsed.problems();
  return read_scenario_json(parsed.value(), options);
}

Result<ScenarioSpec> read_scenario_file(const std::string& path, ReadOptions options) {
  Result<std::string> text = read_text_file(path, options.limits);
  if (!text.ok()) return text.problems();
  options.default_name = std::filesystem::path(path).stem().string();
  return read_scenario_text(text.value(), options);
}

Result<ScenarioSpec> read_default_scenario() {
  ReadOptions options;
  options.default_name = std::string(kDefaultScenarioLabel);
  return read_scenario_text(default_scenario_text(), options);
}

}  // namespace podsim::scenarios
