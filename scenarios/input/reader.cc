#include "scenarios/input/reader.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>

#include "scenarios/input/checker.h"
#include "scenarios/input/schema.h"
#include "scenarios/input/suggest.h"

namespace podsim::scenarios {

using nlohmann::json;

namespace {

std::string num(int64_t value) { return std::to_string(value); }

/// a*b*... or nullopt past 2^62 (degrees are each < 1e8, their product is not).
std::optional<int64_t> checked_product(std::initializer_list<int64_t> factors) {
  int64_t product = 1;
  for (const int64_t factor : factors) {
    if (factor <= 0) return std::nullopt;
    if (product > (int64_t{1} << 62) / factor) return std::nullopt;
    product *= factor;
  }
  return product;
}

/// Up to `limit` divisors of n, ascending ("1, 2, 4, 8").
std::string divisors_text(int64_t n, size_t limit = 10) {
  std::vector<std::string> divisors;
  for (int64_t d = 1; d <= n && divisors.size() < limit; ++d) {
    if (n % d == 0) divisors.push_back(num(d));
    if (d > 100000) break;  // n is bounded, but keep the loop short
  }
  return join_list(divisors, limit);
}

/// "1920 or 2048": the nearest multiples of `step` around `value`.
std::string nearest_multiples(int64_t value, int64_t step) {
  const int64_t below = value / step * step;
  const int64_t above = below + step;
  if (below <= 0) return num(above);
  return num(below) + " or " + num(above);
}

/// Builds a ScenarioSpec from a checked document, reading values only
/// through declared keys, and runs the cross-field checks.
class SpecBuilder {
 public:
  SpecBuilder(const CheckedDocument& doc, std::string prefix, std::vector<Problem>& problems)
      : doc_(doc), prefix_(std::move(prefix)), problems_(problems) {}

  /// The cluster alone (read_cluster_json), with its own checks.
  hwmodels::ClusterSpec build_cluster_only() {
    hwmodels::ClusterSpec cluster;
    build_cluster(cluster);
    return cluster;
  }

  ScenarioSpec build(const std::string& default_name) {
    ScenarioSpec spec;
    spec.name = text("/name").value_or(default_name);
    build_model(spec.model);
    build_cluster(spec.cluster);
    build_training(spec.training);
    build_plan(spec.plan);
    build_options(spec);
    check_job(spec);
    spec.warnings = std::move(warnings_);
    return spec;
  }

 private:
  // --- reading declared values -------------------------------------------
  const KeyDecl& decl(const std::string& path) const {
    const KeyDecl* found = find_decl(scenario_keys(), pattern_of(path));
    if (found == nullptr) {
      std::fprintf(stderr, "podsim: internal: reading undeclared key %s\n", path.c_str());
      std::abort();
    }
    return *found;
  }

  template <typename T>
  std::optional<T> get(const std::string& path) const {
    const KeyDecl& key = decl(path);
    if (doc_.bad.contains(path)) return std::nullopt;
    const auto it = doc_.values.find(path);
    if (it != doc_.values.end()) {
      if (const T* value = std::get_if<T>(&it->second)) return *value;
      std::fprintf(stderr, "podsim: internal: %s read with the wrong type\n", path.c_str());
      std::abort();
    }
    if (key.presence == Presence::kDefault && !doc_.present.contains(path)) {
      const CheckedValue value = declared_default(key);
      if (const T* typed = std::get_if<T>(&value)) return *typed;
    }
    return std::nullopt;
  }

  std::optional<int64_t> integer(const std::string& path) const { return get<int64_t>(path); }
  std::optional<double> number(const std::string& path) const { return get<double>(path); }
  std::optional<bool> flag(const std::string& path) const { return get<bool>(path); }
  std::optional<std::string> text(const std::string& path) const { return get<std::string>(path); }
  /// The key was given (possibly by a preset), whatever its value.
  bool given(const std::string& path) const {
    (void)decl(path);
    return doc_.present.contains(path);
  }
  bool usable(const std::string& path) const { return given(path) && !doc_.bad.contains(path); }

  std::string preset_name(const std::string& path) const {
    const auto it = doc_.presets.find(path);
    return it == doc_.presets.end() ? "custom" : it->second;
  }

  void problem(const std::string& path, std::string message, std::string hint = "") {
    problems_.push_back({prefix_ + path, std::move(message), std::move(hint)});
  }
  void warn(std::string message) { warnings_.push_back(std::move(message)); }

  // --- the parts ----------------------------------------------------------
  void build_model(strategies::ModelShape& m) {
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
    m.norm =
        norm == "layernorm" ? strategies::NormKind::kLayerNorm : strategies::NormKind::kRmsNorm;
    m.tied_embeddings = flag("/model/tied_embeddings").value_or(false);
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
      m.moe = moe;
    }
  }

  void build_gpu(hwmodels::GpuSpec& g) {
    g.name = text("/cluster/gpu/name").value_or(preset_name("/cluster/gpu"));
    g.source = text("/cluster/gpu/source").value_or("");
    const std::pair<const char*, sim::NumberFormat> formats[] = {{"fp32", sim::NumberFormat::kFp32},
                                                                 {"tf32", sim::NumberFormat::kTf32},
                                                                 {"bf16", sim::NumberFormat::kBf16},
                                                                 {"fp16", sim::NumberFormat::kFp16},
                                                                 {"fp8", sim::NumberFormat::kFp8}};
    for (const auto& [key, format] : formats) {
      g.peak_flops_per_s[static_cast<size_t>(format)] =
          number(std::string("/cluster/gpu/peak_flops/") + key).value_or(0);
    }
    g.hbm_capacity_bytes = number("/cluster/gpu/hbm/capacity").value_or(0);
    g.hbm_bw_bytes_per_s = number("/cluster/gpu/hbm/bandwidth").value_or(0);
    g.l2_capacity_bytes = number("/cluster/gpu/l2/capacity").value_or(0);
    g.l2_bw_bytes_per_s = number("/cluster/gpu/l2/bandwidth").value_or(0);
    g.sms = static_cast<int>(integer("/cluster/gpu/sms").value_or(0));
    g.clock_hz = number("/cluster/gpu/clock").value_or(0);
    g.launch_overhead_s = number("/cluster/gpu/launch_overhead").value_or(0);
    g.has_nvls = flag("/cluster/gpu/has_nvls").value_or(false);
    g.profile = text("/cluster/gpu/profile").value_or("");
    gpu_usable_ = usable("/cluster/gpu") && usable("/cluster/gpu/peak_flops");
  }

  void build_cluster(hwmodels::ClusterSpec& c) {
    c.name = text("/cluster/name").value_or(preset_name("/cluster"));
    c.source = text("/cluster/source").value_or("");
    build_gpu(c.gpu);
    nodes_ = integer("/cluster/nodes");
    gpus_per_node_ = integer("/cluster/gpus_per_node");
    c.nodes = static_cast<int>(nodes_.value_or(0));
    c.gpus_per_node = static_cast<int>(gpus_per_node_.value_or(0));

    c.scale_up.bw_bytes_per_s = number("/cluster/scale_up/bandwidth").value_or(0);
    c.scale_up.latency_s = number("/cluster/scale_up/latency").value_or(0);
    c.scale_up.efficiency = number("/cluster/scale_up/efficiency").value_or(1.0);
    std::optional<int64_t> domain =
        given("/cluster/scale_up/domain") ? integer("/cluster/scale_up/domain") : gpus_per_node_;
    c.scale_up.domain = static_cast<int>(domain.value_or(0));
    domain_ = domain;
    if (domain && gpus_per_node_ && given("/cluster/scale_up/domain")) {
      const bool spans_nodes = *domain > *gpus_per_node_ && *domain % *gpus_per_node_ == 0;
      const bool inside_node = *domain <= *gpus_per_node_ && *gpus_per_node_ % *domain == 0;
      if (!spans_nodes && !inside_node) {
        problem("/cluster/scale_up/domain",
                "domain=" + num(*domain) +
                    " neither divides nor is a multiple of gpus_per_node=" + num(*gpus_per_node_),
                "a scale-up domain is a whole number of nodes or a whole fraction of one");
      }
    }

    if (usable("/cluster/scale_out")) {
      c.scale_out.nic_bw_bytes_per_s = number("/cluster/scale_out/nic_bandwidth").value_or(0);
      c.scale_out.nics_per_node = static_cast<int>(
          (given("/cluster/scale_out/nics_per_node") ? integer("/cluster/scale_out/nics_per_node")
                                                     : gpus_per_node_)
              .value_or(0));
      c.scale_out.latency_s = number("/cluster/scale_out/latency").value_or(0);
      c.scale_out.efficiency = number("/cluster/scale_out/efficiency").value_or(1.0);
      c.scale_out.rail_optimized = flag("/cluster/scale_out/rail_optimized").value_or(false);
      build_tiers(c.scale_out);
    } else if (!given("/cluster/scale_out") && nodes_ && *nodes_ > 1) {
      problem("/cluster/scale_out",
              "required when the cluster has more than one node (nodes=" + num(*nodes_) + ")",
              "give {\"nic_bandwidth\": \"400 Gb/s\", \"nics_per_node\": 8, \"tiers\": [...]}, or "
              "start from a cluster preset with \"base\"");
    }
    c.price_per_gpu_hour = number("/cluster/price_per_gpu_hour");
  }

  void build_tiers(hwmodels::ScaleOutSpec& out) {
    const std::string tiers_path = "/cluster/scale_out/tiers";
    if (!given(tiers_path)) {
      out.tiers.push_back({"fabric", 0, 1.0});
      return;
    }
    const auto size = doc_.array_sizes.find(tiers_path);
    if (size == doc_.array_sizes.end()) return;
    int64_t previous_nodes = 0;
    for (size_t i = 0; i < size->second; ++i) {
      const std::string base = tiers_path + "/" + std::to_string(i);
      hwmodels::TierSpec tier;
      tier.name = text(base + "/name").value_or("");
      const std::optional<int64_t> nodes = integer(base + "/nodes");
      tier.nodes = static_cast<int>(nodes.value_or(0));
      tier.oversubscription = number(base + "/oversubscription").value_or(1.0);
      const bool last = i + 1 == size->second;
      if (nodes && *nodes == 0 && !last) {
        problem(base + "/nodes", "0 (all nodes) is only allowed on the last, outermost tier",
                "give the nodes under one switch group of this tier");
      } else if (nodes && *nodes > 0) {
        if (previous_nodes > 0 && *nodes <= previous_nodes) {
          problem(
              base + "/nodes",
              num(*nodes) + " nodes is not more than the tier below (" + num(previous_nodes) + ")",
              "tiers go innermost first, each spanning more nodes");
        } else if (previous_nodes > 0 && *nodes % previous_nodes != 0) {
          problem(base + "/nodes",
                  num(*nodes) + " is not a multiple of the tier below (" + num(previous_nodes) +
                      " nodes)",
                  "use " + nearest_multiples(*nodes, previous_nodes));
        }
        if (last && nodes_ && *nodes < *nodes_) {
          problem(base + "/nodes",
                  "the outermost tier spans " + num(*nodes) + " nodes but the cluster has " +
                      num(*nodes_),
                  "set it to 0 (all nodes) or add an outer tier");
        }
        previous_nodes = *nodes;
      }
      out.tiers.push_back(std::move(tier));
    }
  }

  void build_training(strategies::TrainingSetup& t) {
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
    } else {
      t.precision = sim::NumberFormat::kBf16;
    }
    t.optimizer = text("/training/optimizer").value_or("adam") == "sgd"
                      ? strategies::Optimizer::kSgd
                      : strategies::Optimizer::kAdam;
  }

  void build_plan(strategies::ParallelPlan& p) {
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
    const std::string schedule = text("/parallelism/pipeline/schedule").value_or("1f1b");
    if (schedule == "gpipe") {
      p.schedule = strategies::PipelineSchedule::kGpipe;
    } else if (schedule == "interleaved_1f1b") {
      p.schedule = strategies::PipelineSchedule::kInterleavedOneFOneB;
    } else if (schedule == "zero_bubble") {
      p.schedule = strategies::PipelineSchedule::kZeroBubble;
    } else {
      p.schedule = strategies::PipelineSchedule::kOneFOneB;
    }
    schedule_ = schedule;
    virtual_stages_ = integer("/parallelism/pipeline/virtual_stages");
    p.virtual_stages = virtual_stages_.value_or(1);
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

  void build_options(ScenarioSpec& s) {
    s.options.overlap_dp = flag("/options/overlap/dp").value_or(true);
    s.options.overlap_tp = flag("/options/overlap/tp").value_or(false);
    s.options.overlap_pp = flag("/options/overlap/pp").value_or(true);
    s.options.overlap_cp = flag("/options/overlap/cp").value_or(true);
    s.options.flash_attention = flag("/options/flash_attention").value_or(true);
    s.options.dp_bucket_params = integer("/options/dp_bucket_params").value_or(0);
    s.options.fsdp_unit_layers = integer("/options/fsdp_unit_layers").value_or(1);
    s.options.grad_format = text("/options/grad_format").value_or("fp32") == "bf16"
                                ? sim::NumberFormat::kBf16
                                : sim::NumberFormat::kFp32;
    s.options.zero2_reduce_every_micro_batch = flag("/options/zero2_reduce_every_micro_batch");
    s.mode = text("/options/simulation").value_or("symmetric") == "every_rank"
                 ? SimulationMode::kEveryRank
                 : SimulationMode::kSymmetric;
  }

  // --- cross-field checks ---------------------------------------------------
  void check_job(ScenarioSpec& s) {
    check_gpus(s);
    check_tensor_parallel(s);
    check_pipeline();
    check_batch();
    check_context(s);
    check_experts(s);
    check_sharding(s);
    check_precision(s);
  }

  void check_gpus(ScenarioSpec& s) {
    if (!(dp_ && tp_ && pp_ && cp_)) return;
    const std::optional<int64_t> product = checked_product({*dp_, *tp_, *pp_, *cp_});
    const std::string degrees =
        "dp*tp*pp*cp = " + num(*dp_) + "*" + num(*tp_) + "*" + num(*pp_) + "*" + num(*cp_);
    if (!product || *product > 100'000'000) {
      problem("/parallelism", degrees + " is more than 100,000,000 GPUs",
              "check the parallel degrees");
      return;
    }
    const bool gpus_given = given("/gpus");
    const std::optional<int64_t> gpus = gpus_given ? integer("/gpus") : product;
    if (gpus_given && gpus && *gpus != *product) {
      problem("/gpus", "gpus=" + num(*gpus) + " but " + degrees + " = " + num(*product),
              "set gpus to " + num(*product) + " or change the degrees so they multiply to " +
                  num(*gpus));
    }
    s.gpus = *product;
    if (nodes_ && gpus_per_node_) {
      const int64_t capacity = *nodes_ * *gpus_per_node_;
      if (*product > capacity) {
        const int64_t needed = (*product + *gpus_per_node_ - 1) / *gpus_per_node_;
        problem(gpus_given ? "/gpus" : "/parallelism",
                "the job needs " + num(*product) + " GPUs but the cluster has " + num(*nodes_) +
                    " nodes x " + num(*gpus_per_node_) + " = " + num(capacity),
                "use a cluster with at least " + num(needed) + " nodes, e.g. {\"base\": \"" +
                    preset_name("/cluster") + "\", \"nodes\": " + num(needed) + "}, or fewer GPUs");
      }
    }
    if (tp_ && domain_ && *tp_ > *domain_) {
      warn("tp=" + num(*tp_) + " spans more than one scale-up domain (" + num(*domain_) +
           " GPUs): tensor-parallel traffic crosses the scale-out network");
    }
  }

  void check_tensor_parallel(const ScenarioSpec& s) {
    if (!tp_) return;
    const int64_t tp = *tp_;
    if (heads_ && *heads_ % tp != 0) {
      problem("/parallelism/tp", "tp=" + num(tp) + " does not divide heads=" + num(*heads_),
              "choose tp from " + divisors_text(*heads_));
    }
    if (kv_heads_ && *kv_heads_ % tp != 0 && tp % *kv_heads_ != 0) {
      // Accepted: tp divides kv_heads (KV heads split across TP ranks) or
      // kv_heads divides tp (each KV head replicated on tp/kv_heads ranks, as
      // Megatron does for GQA); anything else leaves ranks with partial heads.
      problem("/parallelism/tp",
              "tp=" + num(tp) + " and kv_heads=" + num(*kv_heads_) + ": neither divides the other",
              "KV heads are split when tp divides kv_heads and replicated when kv_heads divides "
              "tp: use tp from " +
                  divisors_text(*kv_heads_) + " or a multiple of " + num(*kv_heads_));
    }
    if (ffn_ && *ffn_ % tp != 0) {
      problem("/parallelism/tp", "tp=" + num(tp) + " does not divide ffn_hidden=" + num(*ffn_),
              "the MLP is split column-wise across TP ranks: choose tp from " +
                  divisors_text(*ffn_, 8));
    }
    if (s.model.moe && s.model.moe->ffn_hidden % tp != 0) {
      problem("/parallelism/tp",
              "tp=" + num(tp) +
                  " does not divide the expert ffn_hidden=" + num(s.model.moe->ffn_hidden),
              "experts are split across TP ranks like the dense MLP");
    }
    const bool sequence_parallel = s.plan.sequence_parallel;
    if (sequence_parallel && tp == 1) {
      warn("sequence_parallel has no effect with tp=1");
    }
    if (sequence_parallel && seq_len_ && cp_ && *seq_len_ % *cp_ == 0 &&
        (*seq_len_ / *cp_) % tp != 0) {
      problem("/training/seq_len",
              "sequence parallelism splits the " + num(*seq_len_ / *cp_) +
                  " tokens of each CP rank across tp=" + num(tp) + " ranks, which does not divide",
              "use seq_len a multiple of cp*tp = " + num(*cp_ * tp));
    }
  }

  void check_pipeline() {
    if (!pp_ || !layers_) return;
    if (*pp_ > *layers_) {
      problem("/parallelism/pp",
              "pp=" + num(*pp_) + " exceeds layers=" + num(*layers_) +
                  ": every stage needs at least one layer",
              "use pp <= " + num(*layers_));
      return;
    }
    if (!virtual_stages_) return;
    const int64_t v = *virtual_stages_;
    if (v > 1 && schedule_ != "interleaved_1f1b") {
      problem("/parallelism/pipeline/virtual_stages",
              "virtual_stages=" + num(v) + " needs schedule interleaved_1f1b (schedule is " +
                  schedule_ + ")",
              "set /parallelism/pipeline/schedule to \"interleaved_1f1b\", or virtual_stages to 1");
      return;
    }
    if (v * *pp_ > *layers_) {
      problem("/parallelism/pipeline/virtual_stages",
              "virtual_stages*pp = " + num(v) + "*" + num(*pp_) + " = " + num(v * *pp_) +
                  " model chunks exceed layers=" + num(*layers_),
              "every chunk needs a layer: use virtual_stages <= " + num(*layers_ / *pp_));
      return;
    }
    if (schedule_ == "interleaved_1f1b" && *pp_ > 1 && global_batch_ && micro_batch_ && dp_) {
      const std::optional<int64_t> per_step = checked_product({*dp_, *micro_batch_});
      if (per_step && *global_batch_ % *per_step == 0) {
        const int64_t micro_batches = *global_batch_ / *per_step;
        if (micro_batches % *pp_ != 0) {
          problem("/training/global_batch",
                  "interleaved 1F1B runs micro-batches in groups of pp=" + num(*pp_) + ", but " +
                      "global_batch/(dp*micro_batch) = " + num(micro_batches) +
                      " is not a multiple",
                  "use global_batch " + nearest_multiples(*global_batch_, *per_step * *pp_) +
                      ", or the 1f1b schedule");
        }
      }
    }
    if (*layers_ % (v * *pp_) != 0) {
      warn("layers=" + num(*layers_) + " do not split evenly into pp*virtual_stages = " +
           num(v * *pp_) + " chunks: stages are uneven");
    }
    if (schedule_ == "interleaved_1f1b" && *pp_ == 1) {
      warn("interleaved_1f1b with pp=1 is a plain sequence of micro-batches (no pipeline)");
    }
  }

  void check_batch() {
    if (!global_batch_ || !micro_batch_ || !dp_) return;
    const std::optional<int64_t> per_step = checked_product({*dp_, *micro_batch_});
    if (!per_step || *global_batch_ % *per_step != 0) {
      const std::string step = per_step ? num(*per_step) : std::string("more than 2^62");
      problem("/training/global_batch",
              num(*global_batch_) + " is not divisible by dp*micro_batch = " + num(*dp_) + "*" +
                  num(*micro_batch_) + " = " + step,
              per_step ? "use global_batch " + nearest_multiples(*global_batch_, *per_step) +
                             ", or change dp or micro_batch"
                       : "check dp and micro_batch");
    }
  }

  void check_context(const ScenarioSpec& s) {
    if (!cp_ || !seq_len_ || *cp_ == 1) return;
    const int64_t cp = *cp_;
    if (!s.options.flash_attention) {
      problem("/options/flash_attention",
              "context parallelism (cp=" + num(cp) + ") needs flash attention",
              "set /options/flash_attention to true, or cp to 1");
    }
    if (context_ != "ulysses") {
      // Ring and all-gather split each sequence into 2*cp chunks, pairing
      // early and late chunks so the causal work is even (as Llama 3 does).
      if (*seq_len_ % (2 * cp) != 0) {
        problem("/training/seq_len",
                "seq_len=" + num(*seq_len_) + " is not divisible by 2*cp = " + num(2 * cp) + " (" +
                    context_ + " attention splits each sequence into 2*cp chunks for load balance)",
                "use seq_len " + nearest_multiples(*seq_len_, 2 * cp) + ", or another cp");
      }
    } else if (*seq_len_ % cp != 0) {
      problem("/training/seq_len",
              "seq_len=" + num(*seq_len_) + " is not divisible by cp=" + num(cp),
              "use seq_len " + nearest_multiples(*seq_len_, cp) + ", or another cp");
    }
    if (context_ == "ulysses" && heads_ && tp_ && *heads_ % *tp_ == 0) {
      const int64_t heads_per_tp = *heads_ / *tp_;
      if (heads_per_tp % cp != 0) {
        problem("/parallelism/cp",
                "ulysses needs cp to divide the heads of one TP rank (heads/tp = " +
                    num(heads_per_tp) + "), cp=" + num(cp) + " does not",
                "choose cp from " + divisors_text(heads_per_tp) +
                    ", or the ring / all_gather algorithm");
      }
      if (kv_heads_) {
        // KV heads fewer than cp are replicated across the CP group (as for
        // GQA under TP); otherwise they must split evenly.
        const int64_t kv_per_tp = std::max<int64_t>(1, *kv_heads_ / *tp_);
        if (kv_per_tp % cp != 0 && cp % kv_per_tp != 0) {
          problem("/parallelism/cp",
                  "ulysses: kv_heads per TP rank = " + num(kv_per_tp) + " and cp=" + num(cp) +
                      ": neither divides the other",
                  "KV heads are split when cp divides them and replicated when they divide cp");
        }
      }
    }
  }

  void check_experts(const ScenarioSpec& s) {
    if (!ep_) return;
    const int64_t ep = *ep_;
    if (ep > 1 && !s.model.moe) {
      problem("/parallelism/ep", "ep=" + num(ep) + " needs a mixture-of-experts model",
              "give /model/moe or set ep to 1");
      return;
    }
    if (s.model.moe && s.model.moe->experts > 0 && s.model.moe->experts % ep != 0) {
      problem("/parallelism/ep",
              "ep=" + num(ep) + " does not divide experts=" + num(s.model.moe->experts),
              "choose ep from " + divisors_text(s.model.moe->experts));
    }
    if (dp_ && cp_) {
      const int64_t dp_cp = *dp_ * *cp_;
      if (dp_cp % ep != 0) {
        problem("/parallelism/ep",
                "ep=" + num(ep) + " does not divide dp*cp = " + num(dp_cp) +
                    " (expert parallelism is carved out of the data- and context-parallel ranks)",
                "choose ep from " + divisors_text(dp_cp));
      }
    }
  }

  void check_sharding(const ScenarioSpec& s) {
    if (!given("/parallelism/shard_group")) return;
    const std::optional<int64_t> group = integer("/parallelism/shard_group");
    if (!group) return;
    if (dp_ && cp_ && (*dp_ * *cp_) % *group != 0) {
      // FSDP shards over the data- and context-parallel ranks (they hold the
      // same weights), as the schedule builds it.
      problem("/parallelism/shard_group",
              "shard_group=" + num(*group) + " does not divide dp*cp = " + num(*dp_ * *cp_),
              "choose shard_group from " + divisors_text(*dp_ * *cp_));
    }
    if (s.plan.zero == 0 && *group > 1) {
      problem("/parallelism/shard_group", "a shard group needs sharding, but zero=0",
              "set /parallelism/zero to 3 for HSDP, or drop shard_group");
    }
  }

  void check_precision(const ScenarioSpec& s) {
    if (!gpu_usable_) return;
    const hwmodels::GpuSpec& gpu = s.cluster.gpu;
    if (gpu.peak(s.training.precision) <= 0) {
      problem("/cluster/gpu/peak_flops/" + precision_,
              "training.precision is " + precision_ + " but the GPU '" + gpu.name + "' has no " +
                  precision_ + " rate (0)",
              "choose another /training/precision, or give the GPU's " + precision_ + " peak");
    }
    if (s.training.precision == sim::NumberFormat::kFp8 &&
        gpu.peak(sim::NumberFormat::kBf16) <= 0) {
      problem("/cluster/gpu/peak_flops/bf16",
              "fp8 training keeps everything but the matrix products in bf16, and the GPU has no "
              "bf16 rate",
              "give the GPU's bf16 peak");
    }
  }

  const CheckedDocument& doc_;
  std::string prefix_;
  std::vector<Problem>& problems_;
  std::vector<std::string> warnings_;

  // Values the cross-field checks need (nullopt = missing or bad, check skipped).
  std::optional<int64_t> layers_, hidden_, ffn_, heads_, kv_heads_;
  std::optional<int64_t> nodes_, gpus_per_node_, domain_;
  std::optional<int64_t> seq_len_, global_batch_, micro_batch_;
  std::optional<int64_t> dp_, tp_, pp_, cp_, ep_, virtual_stages_;
  std::string precision_ = "bf16";
  std::string schedule_ = "1f1b";
  std::string context_ = "ring";
  bool gpu_usable_ = false;
};

}  // namespace

Result<ScenarioSpec> read_scenario_json(const json& scenario, const ReadOptions& options,
                                        const std::string& path_prefix) {
  const PresetLibrary& presets = options.presets ? *options.presets : builtin_presets();
  std::vector<Problem> problems;
  const Checker checker(scenario_keys(), presets, path_prefix);
  const CheckedDocument doc = checker.check(scenario, problems);
  if (!scenario.is_object()) return problems;
  SpecBuilder builder(doc, path_prefix, problems);
  ScenarioSpec spec = builder.build(options.default_name);
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
