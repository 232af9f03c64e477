#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "hwmodels/cluster_spec.h"
#include "scenarios/input/problem.h"
#include "scenarios/input/spec.h"

namespace podsim::scenarios {

// The hardware a sweep runs its plans on: the scenario's cluster at other GPU
// counts, possibly with another GPU type (its NVLink and price from
// hardware_facts.h).

/// One hardware configuration: the scenario's cluster resized to `gpus` and
/// possibly with another GPU.
struct SweepTarget {
  std::string gpu;  ///< GPU preset name (or the scenario's GPU name)
  int64_t gpus = 0;
  hwmodels::ClusterSpec cluster;
  /// Dollars per GPU-hour, or none when no price is known.
  std::optional<double> price_per_gpu_hour;
  std::string price_source;
  /// What was changed relative to the scenario's cluster other than its
  /// node count, in words (empty: nothing).
  std::string note;
};

/// A GPU to sweep over: its preset name and its data.
struct SweepGpu {
  std::string name;
  hwmodels::GpuSpec spec;
};

/// A GPU preset by name ("b200"), read as a cluster's "gpu" key would be:
/// problems say what is wrong (with the preset names to choose from).
Result<SweepGpu> sweep_gpu_preset(const std::string& name);

/// The scenario's cluster with `gpus` GPUs (nodes = gpus / gpus_per_node)
/// and `gpu` (nullopt: the scenario's own). A new GPU brings its NVLink
/// bandwidth and efficiency where podsim knows them (hardware_facts.h) and
/// its NVLS flag; the scale-out network, tiers and latencies stay. Problems
/// under "/sweep/gpus" when the count is not a multiple of gpus_per_node.
Result<SweepTarget> make_sweep_target(const ScenarioSpec& scenario, int64_t gpus,
                                      const std::optional<SweepGpu>& gpu);

}  // namespace podsim::scenarios
