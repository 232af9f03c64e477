// The `cluster` section of a scenario, read through its declared keys: the
// GPU, the scale-up domain (NVLink, a mesh or a torus) and the scale-out
// tiers, into a ClusterSpec. The rest of the scenario is reader.cc.
#include <optional>
#include <string>
#include <utility>

#include "hwmodels/gpu_model.h"
#include "scenarios/input/spec_builder.h"

namespace podsim::scenarios::reader_detail {

void SpecBuilder::build_gpu(hwmodels::GpuSpec& g) {
  g.name = text("/cluster/gpu/name").value_or(preset_name("/cluster/gpu"));
  g.source = text("/cluster/gpu/source").value_or("");
  const std::pair<const char*, sim::NumberFormat> formats[] = {
      {"fp32", sim::NumberFormat::kFp32}, {"tf32", sim::NumberFormat::kTf32},
      {"bf16", sim::NumberFormat::kBf16}, {"fp16", sim::NumberFormat::kFp16},
      {"fp8", sim::NumberFormat::kFp8},   {"int8", sim::NumberFormat::kInt8},
      {"fp4", sim::NumberFormat::kFp4}};
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
  g.board_power_w = number("/cluster/gpu/board_power").value_or(0);
  g.host_link_bytes_per_s = number("/cluster/gpu/host_link").value_or(0);
  g.power_limit_w = g.board_power_w;
  if (given("/cluster/gpu/power_limit")) {
    const std::optional<double> limit = number("/cluster/gpu/power_limit");
    if (limit && !given("/cluster/gpu/board_power")) {
      problem("/cluster/gpu/power_limit",
              "a power limit needs the board power the GPU's measurements ran at",
              "give /cluster/gpu/board_power, or start from a GPU preset with \"base\"");
    } else if (limit && *limit > g.board_power_w) {
      problem("/cluster/gpu/power_limit",
              format_number(*limit) + " W is above the board power (" +
                  format_number(g.board_power_w) + " W)",
              "a board cannot be capped above its rating: use at most " +
                  format_number(g.board_power_w) + " W");
    } else if (limit && *limit <= hwmodels::kPowerModelStaticW && *limit < g.board_power_w) {
      problem("/cluster/gpu/power_limit",
              format_number(*limit) + " W leaves the tensor cores nothing: a board draws about " +
                  format_number(hwmodels::kPowerModelStaticW) + " W with them idle",
              "use a limit above " + format_number(hwmodels::kPowerModelStaticW) + " W");
    } else if (limit) {
      g.power_limit_w = *limit;
    }
  }
  g.profile = text("/cluster/gpu/profile").value_or("");
  gpu_usable_ = usable("/cluster/gpu") && usable("/cluster/gpu/peak_flops");
}

void SpecBuilder::build_cluster(hwmodels::ClusterSpec& c) {
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
  const std::string topology = text("/cluster/scale_up/topology").value_or("switch");
  c.scale_up.topology = topology == "mesh"    ? hwmodels::ScaleUpTopology::kMesh
                        : topology == "torus" ? hwmodels::ScaleUpTopology::kTorus
                                              : hwmodels::ScaleUpTopology::kSwitch;
  c.slices = static_cast<int>(integer("/cluster/slices").value_or(1));
  if (usable("/cluster/scale_up/torus")) {
    hwmodels::TorusSpec& t = c.scale_up.torus;
    t.dims = static_cast<int>(integer("/cluster/scale_up/torus/dims").value_or(3));
    t.shape = parse_grid(text("/cluster/scale_up/torus/shape").value_or(""));
    t.max_shape = parse_grid(text("/cluster/scale_up/torus/max_shape").value_or(""));
    t.wrap_length = static_cast<int>(integer("/cluster/scale_up/torus/wrap_length").value_or(0));
    t.wrap_needs_all_axes = flag("/cluster/scale_up/torus/wrap_needs_all_axes").value_or(false);
  }
  // A torus domain is its slice (the fabric derives it); else one node.
  const bool torus = c.scale_up.topology == hwmodels::ScaleUpTopology::kTorus;
  std::optional<int64_t> domain = given("/cluster/scale_up/domain")
                                      ? integer("/cluster/scale_up/domain")
                                  : torus ? std::optional<int64_t>(0)
                                          : gpus_per_node_;
  c.scale_up.domain = static_cast<int>(domain.value_or(0));
  domain_ = domain;
  if (torus && !given("/cluster/scale_up/domain") && nodes_ && gpus_per_node_ && c.slices > 0) {
    domain_ = *nodes_ * *gpus_per_node_ / c.slices;
  }
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
    c.scale_out.nics_per_node = static_cast<int>((given("/cluster/scale_out/nics_per_node")
                                                      ? integer("/cluster/scale_out/nics_per_node")
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
  c.price_source = text("/cluster/price_source").value_or("");
}

void SpecBuilder::build_tiers(hwmodels::ScaleOutSpec& out) {
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

}  // namespace podsim::scenarios::reader_detail
