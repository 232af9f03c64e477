#include "scenarios/sweep/targets.h"

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hwmodels/fabric.h"
#include "scenarios/input/presets.h"
#include "scenarios/input/reader.h"
#include "scenarios/input/suggest.h"
#include "scenarios/sweep/hardware_facts.h"
#include "sim/ceil_div.h"

namespace podsim::scenarios {
namespace {

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) {
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out;
}

// The fewest slices, each a whole number of hosts, that a torus pod's chips
// split into with every slice a valid torus (inside the largest slice).
std::optional<int> fewest_slices(hwmodels::ClusterSpec cluster) {
  for (int m = 1; m <= cluster.nodes; ++m) {
    if (cluster.nodes % m != 0) continue;
    cluster.slices = m;
    if (hwmodels::Fabric::validate(cluster).empty()) return m;
  }
  return std::nullopt;
}

const char* scale_up_words(hwmodels::ScaleUpTopology topology) {
  switch (topology) {
    case hwmodels::ScaleUpTopology::kSwitch:
      return "a switch (NVSwitch)";
    case hwmodels::ScaleUpTopology::kMesh:
      return "a full mesh (Infinity Fabric)";
    case hwmodels::ScaleUpTopology::kTorus:
      return "a torus (TPU ICI)";
  }
  return "its own scale-up";
}

}  // namespace

Result<SweepHardware> sweep_hardware_preset(const std::string& given) {
  const PresetLibrary& presets = builtin_presets();
  const std::vector<std::string> gpu_names = presets.names("gpus");
  const std::vector<std::string> cluster_names = presets.names("clusters");
  // A name of either kind as it is; else a GPU's prefix or common name
  // ("h100", "H100 SXM"), else a cluster's.
  std::string name = given;
  if (presets.find("clusters", given) == nullptr && presets.find("gpus", given) == nullptr) {
    const NameMatch gpu = match_name(given, gpu_names);
    const NameMatch cluster =
        gpu.name.empty() && gpu.ambiguous.empty() ? match_name(given, cluster_names) : NameMatch{};
    name = !gpu.name.empty() ? gpu.name : cluster.name;
    if (name.empty()) {
      const std::vector<std::string>& several =
          gpu.ambiguous.empty() ? cluster.ambiguous : gpu.ambiguous;
      std::vector<std::string> all = gpu_names;
      all.insert(all.end(), cluster_names.begin(), cluster_names.end());
      const std::string guess = closest_match(given, all);
      return std::vector<Problem>{
          {"/sweep/gpu-types", "unknown GPU or cluster preset " + quote_for_message(given),
           !several.empty() ? quote_for_message(given) + " could be " + join_list(several, 40) +
                                  ": give more of the name"
           : !guess.empty() ? "did you mean '" + guess + "'?"
                            : "GPU presets: " + join_names(gpu_names) +
                                  "; cluster presets: " + join_names(cluster_names)}};
    }
  }
  if (presets.find("clusters", name) != nullptr) {
    Result<hwmodels::ClusterSpec> c = read_cluster_json(nlohmann::json(name));
    if (!c.ok()) return c.problems();
    return SweepHardware{name, c.value().gpu, c.value()};
  }
  // A GPU preset: any cluster preset carries the GPU key; only the GPU is kept.
  const std::vector<std::string>& clusters = cluster_names;
  if (clusters.empty()) {
    return std::vector<Problem>{{"/sweep/gpu", "no cluster presets are built in", ""}};
  }
  Result<hwmodels::ClusterSpec> c =
      read_cluster_json(nlohmann::json{{"base", clusters.front()}, {"gpu", name}});
  if (!c.ok()) {
    std::vector<Problem> problems = c.problems();
    for (Problem& p : problems) {
      if (p.path.rfind("/cluster/gpu", 0) == 0) {
        p.path = "/sweep/gpu-types" + p.path.substr(12);
        p.hint += std::string(p.hint.empty() ? "" : "; ") + "or name a cluster preset (" +
                  join_names(clusters) + ")";
      }
    }
    return problems;
  }
  return SweepHardware{name, c.value().gpu, std::nullopt};
}

SweepHardware placed_for(const ScenarioSpec& scenario, SweepHardware hardware) {
  if (hardware.cluster || hardware.name == scenario.cluster.gpu.name) return hardware;
  const hwmodels::ScaleUpTopology here = scenario.cluster.scale_up.topology;
  std::optional<SweepHardware> home;  // the first preset carrying the GPU
  for (const std::string& name : builtin_presets().names("clusters")) {
    Result<hwmodels::ClusterSpec> c = read_cluster_json(nlohmann::json(name));
    if (!c.ok() || c.value().gpu.name != hardware.name) continue;
    if (c.value().scale_up.topology == here) return hardware;
    if (!home) home = SweepHardware{name, c.value().gpu, c.value()};
  }
  if (!home) return hardware;
  home->placed_because = hardware.name + " named: no preset puts it in " + scale_up_words(here) +
                         " as the scenario's cluster joins its GPUs";
  return *home;
}

Result<SweepTarget> make_sweep_target(const ScenarioSpec& scenario, int64_t gpus,
                                      const std::optional<SweepHardware>& given) {
  const std::optional<SweepHardware> hardware =
      given ? std::optional(placed_for(scenario, *given)) : std::nullopt;
  const bool whole_cluster = hardware.has_value() && hardware->cluster.has_value();
  const hwmodels::ClusterSpec& base = whole_cluster ? *hardware->cluster : scenario.cluster;
  if (gpus < 1) {
    return std::vector<Problem>{
        {"/sweep/gpus", "GPU count must be at least 1, got " + std::to_string(gpus), ""}};
  }
  if (base.gpus_per_node < 1) {
    return std::vector<Problem>{{"/cluster/gpus_per_node", "must be at least 1", ""}};
  }
  if (gpus > base.gpus_per_node && gpus % base.gpus_per_node != 0) {
    return std::vector<Problem>{{"/sweep/gpus",
                                 std::to_string(gpus) + " GPUs is not a whole number of " +
                                     std::to_string(base.gpus_per_node) + "-GPU nodes" +
                                     (whole_cluster ? " of " + hardware->name : ""),
                                 "use a multiple of gpus_per_node"}};
  }
  SweepTarget t;
  t.gpus = gpus;
  t.cluster = base;
  t.cluster.nodes = static_cast<int>(ceil_div(gpus, base.gpus_per_node));
  t.gpu = base.gpu.name;
  std::string note;
  const bool swapped = hardware.has_value() && !whole_cluster && hardware->name != base.gpu.name;
  if (whole_cluster) {
    t.gpu = hardware->name;
    note = hardware->name + " as its preset has it (its own scale-up and scale-out network)";
    if (!hardware->placed_because.empty()) note += "; " + hardware->placed_because;
    if (base.scale_up.topology == hwmodels::ScaleUpTopology::kTorus) {
      const std::optional<int> slices = fewest_slices(t.cluster);
      if (!slices) {
        return std::vector<Problem>{{"/sweep/gpus",
                                     std::to_string(gpus) + " chips do not split into slices of " +
                                         hardware->name +
                                         " (whole hosts, each slice a torus "
                                         "inside the pod's largest slice)",
                                     "use a count of whole hosts that divides into such slices"}};
      }
      t.cluster.slices = *slices;
      if (*slices > 1) {
        note += "; " + std::to_string(*slices) + " slices joined over the data-centre network";
      }
    }
  } else if (swapped) {
    t.gpu = hardware->name;
    t.cluster.gpu = hardware->spec;
    note = hardware->name + " GPUs in the scenario's cluster (network, tiers and latencies kept";
    if (const std::optional<ScaleUpFacts> link = scale_up_facts(hardware->name)) {
      t.cluster.scale_up.bw_bytes_per_s = link->bw_bytes_per_s;
      t.cluster.scale_up.efficiency = link->efficiency;
      note += "; scale-up link from " + link->source;
    } else {
      note += "; scale-up link kept: no data for this GPU's own";
    }
    note +=
        std::string("; NVLS ") + (hardware->spec.has_nvls ? "on" : "off") + " from the GPU preset)";
  }
  if (base.price_per_gpu_hour && !swapped) {
    t.price_per_gpu_hour = base.price_per_gpu_hour;
    t.price_source = whole_cluster ? hardware->name + " preset: " + base.price_source
                                   : "the scenario's cluster price_per_gpu_hour";
    t.list_price = base.price_source.rfind("public list price", 0) == 0;
  } else if (const std::optional<GpuPrice> price = reference_price(t.cluster.gpu.name)) {
    t.price_per_gpu_hour = price->usd_per_gpu_hour;
    t.price_source = price->source;
  } else {
    t.price_source = "no price known for " + t.gpu + " (set cluster.price_per_gpu_hour)";
  }
  t.note = std::move(note);
  return t;
}

}  // namespace podsim::scenarios
