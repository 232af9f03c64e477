#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

#include "scenarios/input/json_text.h"
#include "scenarios/input/presets.h"
#include "scenarios/input/problem.h"
#include "scenarios/input/spec.h"

namespace podsim::scenarios {

/// How a scenario is read.
struct ReadOptions {
  /// Presets to resolve names against; nullptr = the built-in presets.
  const PresetLibrary* presets = nullptr;
  /// The scenario's name when it gives none ("name" key).
  std::string default_name = "scenario";
  JsonLimits limits;
  /// Problems of the scenario's own plan found by the job's cross-field
  /// checks (at /parallelism/..., /gpus, /training/micro_batch) go to
  /// ScenarioSpec::plan_problems instead of failing the read: `podsim sweep`
  /// tries other plans anyway.
  bool plan_problems_as_warnings = false;
};

/// Reads and checks a scenario (scenario-format.md) from JSON text. Every
/// problem of the text comes back at once, each with its JSON pointer, what
/// is wrong and a hint. Never throws for bad input.
Result<ScenarioSpec> read_scenario_text(std::string_view text, const ReadOptions& options = {});

/// Same, from a file; the name defaults to the file name without ".json".
Result<ScenarioSpec> read_scenario_file(const std::string& path, ReadOptions options = {});

/// Same, from parsed JSON; every problem path starts with `path_prefix`
/// (validation cases use "/cases/3/scenario").
Result<ScenarioSpec> read_scenario_json(const nlohmann::json& scenario,
                                        const ReadOptions& options = {},
                                        const std::string& path_prefix = "");

/// A cluster alone, as the "cluster" key of a scenario takes it: a preset
/// name ("llama3-24k") or an object; problems have paths under "/cluster".
Result<hwmodels::ClusterSpec> read_cluster_json(const nlohmann::json& cluster,
                                                const ReadOptions& options = {});

/// The built-in default scenario: Llama 3 405B on llama3-24k (16,384 GPUs,
/// TP8 CP1 PP16 DP128, seq 8192), scenarios/examples/llama3-405b-16k.json.
Result<ScenarioSpec> read_default_scenario();

}  // namespace podsim::scenarios
