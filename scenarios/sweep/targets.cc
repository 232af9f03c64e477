#include "scenarios/sweep/targets.h"

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "scenarios/input/presets.h"
#include "scenarios/input/reader.h"
#include "scenarios/sweep/hardware_facts.h"

namespace podsim::scenarios {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

Result<SweepGpu> sweep_gpu_preset(const std::string& name) {
  // Any cluster preset carries the GPU key; only the GPU is kept.
  const std::vector<std::string> clusters = builtin_presets().names("clusters");
  if (clusters.empty()) {
    return std::vector<Problem>{{"/sweep/gpu", "no cluster presets are built in", ""}};
  }
  Result<hwmodels::ClusterSpec> c =
      read_cluster_json(nlohmann::json{{"base", clusters.front()}, {"gpu", name}});
  if (!c.ok()) {
    std::vector<Problem> problems = c.problems();
    for (Problem& p : problems) {
      if (p.path.rfind("/cluster/gpu", 0) == 0) p.path = "/sweep/gpu-types" + p.path.substr(12);
    }
    return problems;
  }
  return SweepGpu{name, c.value().gpu};
}

Result<SweepTarget> make_sweep_target(const ScenarioSpec& scenario, int64_t gpus,
                                      const std::optional<SweepGpu>& gpu) {
  const hwmodels::ClusterSpec& base = scenario.cluster;
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
                                     std::to_string(base.gpus_per_node) + "-GPU nodes",
                                 "use a multiple of gpus_per_node"}};
  }
  SweepTarget t;
  t.gpus = gpus;
  t.cluster = base;
  t.cluster.nodes = static_cast<int>(ceil_div(gpus, base.gpus_per_node));
  t.gpu = base.gpu.name;
  std::string note;
  const bool swapped = gpu.has_value() && gpu->name != base.gpu.name;
  if (swapped) {
    t.gpu = gpu->name;
    t.cluster.gpu = gpu->spec;
    note = gpu->name + " GPUs in the scenario's cluster (network, tiers and latencies kept";
    if (const std::optional<ScaleUpFacts> link = scale_up_facts(gpu->name)) {
      t.cluster.scale_up.bw_bytes_per_s = link->bw_bytes_per_s;
      t.cluster.scale_up.efficiency = link->efficiency;
      note += "; scale-up link from " + link->source;
    } else {
      note += "; scale-up link kept: no data for this GPU's own";
    }
    note += std::string("; NVLS ") + (gpu->spec.has_nvls ? "on" : "off") + " from the GPU preset)";
  }
  if (base.price_per_gpu_hour && !swapped) {
    t.price_per_gpu_hour = base.price_per_gpu_hour;
    t.price_source = "the scenario's cluster price_per_gpu_hour";
  } else if (const std::optional<GpuPrice> price = reference_price(t.gpu)) {
    t.price_per_gpu_hour = price->usd_per_gpu_hour;
    t.price_source = price->source;
  } else {
    t.price_source = "no price known for " + t.gpu + " (set cluster.price_per_gpu_hour)";
  }
  t.note = std::move(note);
  return t;
}

}  // namespace podsim::scenarios
