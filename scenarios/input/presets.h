#pragma once

#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "scenarios/input/problem.h"

namespace podsim::scenarios {

/// Named models, GPUs, clusters and software stacks, each a JSON object in
/// the scenario format's object form plus a "source" line. Immutable; cheap
/// to copy.
class PresetLibrary {
 public:
  /// Parses the preset files (objects of name -> preset); `software` may be
  /// empty (no software presets).
  static Result<PresetLibrary> from_texts(std::string_view models, std::string_view gpus,
                                          std::string_view clusters,
                                          std::string_view software = "{}");

  /// Preset names of a category ("models", "gpus", "clusters", "software"), sorted.
  std::vector<std::string> names(std::string_view category) const;
  /// The preset's JSON object, or nullptr.
  const nlohmann::json* find(std::string_view category, std::string_view name) const;
  /// {"models": {...}, "gpus": {...}, "clusters": {...}, "software": {...}}
  const nlohmann::json& all() const { return *data_; }

 private:
  explicit PresetLibrary(std::shared_ptr<const nlohmann::json> data) : data_(std::move(data)) {}
  std::shared_ptr<const nlohmann::json> data_;
};

/// The presets built into the binary (scenarios/input/presets/*.json, embedded at
/// build time). Parsed once; aborts with context if the embedded data is
/// broken (a build error, caught by the tests).
const PresetLibrary& builtin_presets();

/// The built-in default scenario (scenarios/examples/llama3-405b-16k.json).
std::string_view default_scenario_text();
/// The name the default scenario is reported under when it has none.
inline constexpr std::string_view kDefaultScenarioLabel = "llama3-405b-16k (built-in default)";

}  // namespace podsim::scenarios
