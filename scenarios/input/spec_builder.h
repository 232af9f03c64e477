#pragma once

// Inside the reader: a ScenarioSpec is built from a checked document through
// declared keys only (reader.cc), then the cross-field checks that need
// several keys at once run (reader_checks.cc). Not part of the reader's API.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "scenarios/input/checker.h"
#include "scenarios/input/problem.h"
#include "scenarios/input/schema.h"
#include "scenarios/input/spec.h"
#include "scenarios/input/suggest.h"

namespace podsim::scenarios::reader_detail {

inline std::string num(int64_t value) { return std::to_string(value); }

/// a*b*... or nullopt past 2^62 (degrees are each < 1e8, their product is not).
inline std::optional<int64_t> checked_product(std::initializer_list<int64_t> factors) {
  int64_t product = 1;
  for (const int64_t factor : factors) {
    if (factor <= 0) return std::nullopt;
    if (product > (int64_t{1} << 62) / factor) return std::nullopt;
    product *= factor;
  }
  return product;
}

/// An enum key's value mapped through (name, value) pairs; the checker has
/// accepted only declared names (a bad value reads as nullopt), so an unknown
/// one is a bug.
template <typename T, size_t N>
T pick(const std::optional<std::string>& name, const std::pair<const char*, T> (&choices)[N],
       T fallback) {
  if (!name) return fallback;
  for (const auto& [text, value] : choices) {
    if (*name == text) return value;
  }
  std::fprintf(stderr, "podsim: internal: undeclared value %s\n", name->c_str());
  std::abort();
}

/// Up to `limit` divisors of n, ascending ("1, 2, 4, 8").
inline std::string divisors_text(int64_t n, size_t limit = 10) {
  std::vector<std::string> divisors;
  for (int64_t d = 1; d <= n && divisors.size() < limit; ++d) {
    if (n % d == 0) divisors.push_back(num(d));
    if (d > 100000) break;  // n is bounded, but keep the loop short
  }
  return join_list(divisors, limit);
}

/// "1920 or 2048": the nearest multiples of `step` around `value`.
inline std::string nearest_multiples(int64_t value, int64_t step) {
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
  hwmodels::ClusterSpec build_cluster_only();

  ScenarioSpec build(const std::string& default_name);
  /// How many problems there were before the cross-field checks of the job
  /// (check_job) ran: the ones after are about the plan as a whole.
  size_t problems_before_job_checks() const { return problems_before_job_checks_; }

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

  void problem(const std::string& path, std::string message, std::string hint = "");
  void warn(std::string message);

  // --- the parts (reader.cc) ------------------------------------------------
  void build_model(strategies::ModelShape& m);
  void build_attention(strategies::ModelShape& m);
  void build_layout(strategies::ParallelPlan& p);
  void build_offload(strategies::ParallelPlan& p);
  void build_gpu(hwmodels::GpuSpec& g);
  void build_cluster(hwmodels::ClusterSpec& c);
  void build_tiers(hwmodels::ScaleOutSpec& out);
  void build_training(strategies::TrainingSetup& t);
  void build_plan(strategies::ParallelPlan& p);
  void build_options(ScenarioSpec& s);
  // The run-level keys (run_reader.cc): reliability, storage, the run.
  void build_run(ScenarioSpec& s);
  /// A framework whose tensor parallelism always shards the activations runs
  /// a tp > 1 plan with sequence parallelism (software.tensor_parallel).
  void shard_tp_activations(ScenarioSpec& s);
  /// The plan's overlap options as far as the software can honour them.
  void software_overlaps(ScenarioSpec& s);
  // Slow parts in the step (/degraded), after the job's GPU count is known.
  void build_degraded(ScenarioSpec& s);
  void build_software(SoftwareSpec& s);  // reader_software.cc
  /// Where the value at `path` (a software mechanism) comes from: the group's
  /// `sources` entry, or "set in the scenario" when an override object set
  /// the value but not its source.
  std::string mechanism_source(const std::string& path) const;

  // --- cross-field checks (reader_checks.cc) ---------------------------------
  void check_job(ScenarioSpec& s);
  void check_gpus(ScenarioSpec& s);
  void check_tensor_parallel(const ScenarioSpec& s);
  void resolve_asym_layout(ScenarioSpec& s);
  void check_pipeline();
  void check_dualpipe();
  void check_batch();
  void check_context(const ScenarioSpec& s);
  void check_experts(const ScenarioSpec& s);
  void check_sharding(const ScenarioSpec& s);
  void check_precision(const ScenarioSpec& s);
  /// Quantities beyond any hardware (a unit slip): input_warnings, not problems.
  void check_plausible(ScenarioSpec& s);

  const CheckedDocument& doc_;
  std::string prefix_;
  std::vector<Problem>& problems_;
  std::vector<std::string> warnings_;
  size_t problems_before_job_checks_ = 0;

  // Values the cross-field checks need (nullopt = missing or bad, check skipped).
  std::optional<int64_t> layers_, hidden_, ffn_, heads_, kv_heads_;
  std::optional<int64_t> nodes_, gpus_per_node_, domain_;
  std::optional<int64_t> seq_len_, global_batch_, micro_batch_;
  std::optional<int64_t> dp_, tp_, pp_, cp_, ep_, expert_tp_, virtual_stages_;
  bool layout_given_ = false;
  bool asym_embed_loss_ = false;  ///< layout "asym-embed-loss", resolved in check_job
  std::string precision_ = "bf16";
  std::string recipe_;  ///< training.precision_recipe as given ("" = unset)
  std::string schedule_ = "1f1b";
  std::string context_ = "ring";
  bool gpu_usable_ = false;
};

}  // namespace podsim::scenarios::reader_detail
