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
// hardware_facts.h) or another cluster preset whole (the GPU with the
// network it ships with).

/// One hardware configuration: the scenario's cluster resized to `gpus` and
/// possibly with another GPU, or a cluster preset resized to `gpus`.
struct SweepTarget {
  std::string gpu;  ///< the hardware type: a GPU or cluster preset name (or the scenario's GPU)
  int64_t gpus = 0;
  hwmodels::ClusterSpec cluster;
  /// Dollars per GPU-hour, or none when no price is known.
  std::optional<double> price_per_gpu_hour;
  std::string price_source;
  /// The price is a public list price (a cluster preset's, so marked).
  bool list_price = false;
  /// What was changed relative to the scenario's cluster other than its
  /// node count, in words (empty: nothing).
  std::string note;
};

/// A hardware type to sweep over: a GPU preset (put into the scenario's
/// cluster) or a cluster preset (used whole, with its own network).
struct SweepHardware {
  std::string name;
  hwmodels::GpuSpec spec;
  std::optional<hwmodels::ClusterSpec> cluster;  ///< set for a cluster preset
  /// Why a GPU preset given by name is swept on its own cluster preset
  /// instead (placed_for), in words; empty otherwise.
  std::string placed_because;
};

/// A GPU preset ("b200") read as a cluster's "gpu" key would be, or a
/// cluster preset ("gb200-nvl72"), named in full or by a unique prefix or
/// common name ("h100", "H100 SXM": match_name, GPUs before clusters; the
/// result carries the full name): problems under "/sweep/gpu-types" say what
/// is wrong (with the preset names to choose from).
Result<SweepHardware> sweep_hardware_preset(const std::string& given);

/// Where a GPU preset can be swept for `scenario`: in the scenario's
/// cluster when a cluster preset builds that GPU into the same kind of
/// scale-up network as the scenario's (NVSwitch nodes, an AMD Infinity Fabric
/// mesh, a TPU torus), so that only the GPU changes; otherwise on the cluster
/// preset built around it (a TPU chip or an MI355X has no place in an
/// NVSwitch node), the first in name order when several are. Cluster
/// presets, and GPUs no cluster preset carries, come back as they are.
SweepHardware placed_for(const ScenarioSpec& scenario, SweepHardware hardware);

/// The scenario's cluster with `gpus` GPUs (nodes = gpus / gpus_per_node)
/// and `hardware`'s GPU (nullopt: the scenario's own), or `hardware`'s
/// cluster preset with `gpus` GPUs (a GPU preset goes where placed_for
/// puts it). A new GPU brings its NVLink bandwidth
/// and efficiency where podsim knows them (hardware_facts.h) and its NVLS
/// flag; the scale-out network, tiers and latencies stay. A cluster preset
/// brings everything; a TPU pod is split into as few slices as fit its
/// largest slice. Problems under "/sweep/gpus" when the count is not a
/// multiple of gpus_per_node (or no split into slices fits).
Result<SweepTarget> make_sweep_target(const ScenarioSpec& scenario, int64_t gpus,
                                      const std::optional<SweepHardware>& hardware);

}  // namespace podsim::scenarios
