// Fabric::validate: the problems of a cluster spec that would make its
// fabric wrong or too large to build, each at its key with the fix.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "hwmodels/fabric.h"
#include "hwmodels/fabric_detail.h"

namespace podsim::hwmodels {
namespace {

using fabric_detail::built_nodes;
using fabric_detail::shape_text;

bool in_unit_interval(double x) { return x > 0 && x <= 1.0; }

/// No link is slower than this: bandwidth x efficiency below it is a typo
/// or an underflow (5e-324 B/s x 0.5 is 0), never hardware.
constexpr double kMinLinkBytesPerS = 1.0;

SpecProblem too_slow(const std::string& path, const char* key, double bandwidth,
                     double efficiency) {
  char text[160];
  std::snprintf(text, sizeof text, "%s x efficiency = %.3g B/s x %.3g = %.3g B/s is below 1 B/s",
                key, bandwidth, efficiency, bandwidth * efficiency);
  return {path, text,
          "check the bandwidth and its unit ('400 Gb/s', '450 GB/s') and the efficiency, the "
          "fraction of it payload reaches"};
}

/// More links than this would take gigabytes (and overflow the 32-bit
/// vertex and link indices well before 2^32).
constexpr int64_t kMaxFabricLinks = int64_t{1} << 25;

// Problems of the scale-up topology and the slices.
void validate_topology(const ClusterSpec& c, int domain, std::vector<SpecProblem>& out) {
  const ScaleUpSpec& su = c.scale_up;
  const bool torus = su.topology == ScaleUpTopology::kTorus;
  if (c.slices < 1) {
    out.push_back({"slices", "must be at least 1", ""});
    return;
  }
  if (!torus && c.slices != 1) {
    out.push_back({"slices", "only a torus (TPU) cluster is split into slices",
                   "set scale_up.topology to \"torus\" or drop slices"});
    return;
  }
  if (su.topology == ScaleUpTopology::kMesh &&
      (domain > c.gpus_per_node || c.gpus_per_node % domain != 0)) {
    out.push_back({"scale_up/domain",
                   "a mesh joins the GPUs of one node; " + std::to_string(domain) +
                       " does not divide gpus_per_node=" + std::to_string(c.gpus_per_node),
                   "use gpus_per_node or a divisor of it"});
  }
  if (!torus) return;
  if (c.nodes > 0 && c.nodes % c.slices != 0) {
    out.push_back({"slices",
                   std::to_string(c.slices) + " slices do not split " + std::to_string(c.nodes) +
                       " nodes evenly",
                   "use a divisor of nodes"});
    return;
  }
  if (su.domain != 0 && su.domain != domain) {
    out.push_back({"scale_up/domain",
                   "a torus domain is its slice: " + std::to_string(domain) + " chips, not " +
                       std::to_string(su.domain),
                   "drop scale_up.domain and set slices"});
  }
  const TorusSpec& t = su.torus;
  if (t.dims < 2 || t.dims > 3) {
    out.push_back({"scale_up/torus/dims", "must be 2 or 3", ""});
    return;
  }
  if (!t.max_shape.empty() && static_cast<int>(t.max_shape.size()) != t.dims) {
    out.push_back(
        {"scale_up/torus/max_shape",
         "has " + std::to_string(t.max_shape.size()) + " axes, dims is " + std::to_string(t.dims),
         ""});
    return;
  }
  if (!t.shape.empty()) {
    long long chips = 1;
    for (int a : t.shape) chips *= a;
    if (static_cast<int>(t.shape.size()) != t.dims || chips != domain) {
      out.push_back({"scale_up/torus/shape",
                     shape_text(t.shape) + " is not a " + std::to_string(t.dims) +
                         "-axis grid of the slice's " + std::to_string(domain) + " chips",
                     "give dims axes whose product is nodes x gpus_per_node / slices"});
    }
    return;
  }
  if (domain > 0 && torus_shape(t, domain).empty()) {
    out.push_back({"slices",
                   "no " + std::to_string(t.dims) + "-axis slice of " + std::to_string(domain) +
                       " chips fits the pod's " + shape_text(t.max_shape),
                   "split the chips into more slices joined over the data-centre network"});
  }
}

}  // namespace

std::vector<SpecProblem> Fabric::validate(const ClusterSpec& c, const FabricOptions& options) {
  std::vector<SpecProblem> out;
  if (c.nodes > 0 && c.gpus_per_node > 0) {
    // Two directed links per GPU port (NVLink, one per NIC it reaches) and
    // per NIC; switches add fewer than NICs.
    const int64_t nodes = built_nodes(c, options);
    const int64_t gpus = nodes * c.gpus_per_node;
    const int64_t nics = nodes * std::max(0, c.scale_out.nics_per_node);
    const int64_t nics_per_gpu = std::max<int64_t>(1, nics / std::max<int64_t>(1, gpus));
    const int64_t links = 2 * (gpus + gpus * nics_per_gpu + 2 * nics);
    if (links > kMaxFabricLinks) {
      out.push_back({"",
                     "the network of the " + std::to_string(gpus) + " GPUs simulated (" +
                         std::to_string(nics) + " NICs) has about " + std::to_string(links) +
                         " links, more than podsim builds (" + std::to_string(kMaxFabricLinks) +
                         ")",
                     "simulate fewer GPUs, or fewer NICs per node"});
      return out;
    }
  }
  if (c.nodes <= 0) out.push_back({"nodes", "must be a positive number of nodes", ""});
  if (c.gpus_per_node <= 0) {
    out.push_back({"gpus_per_node", "must be positive", ""});
    return out;
  }
  const int domain = c.scale_up_domain();
  if (domain < 0) {
    out.push_back({"scale_up/domain", "must be positive", "0 means gpus_per_node"});
    return out;
  }
  const size_t before = out.size();
  validate_topology(c, domain, out);
  if (out.size() > before || domain == 0) return out;
  if (domain % c.gpus_per_node != 0 && c.gpus_per_node % domain != 0) {
    out.push_back({"scale_up/domain",
                   std::to_string(domain) +
                       " GPUs per NVLink domain neither divides nor is a "
                       "multiple of gpus_per_node=" +
                       std::to_string(c.gpus_per_node),
                   "use a whole number of nodes per domain (NVL72: 72 with 4 per node)"});
  }
  if (domain > 1) {
    if (!(c.scale_up.bw_bytes_per_s > 0)) {
      out.push_back({"scale_up/bandwidth", "must be positive when domains hold several GPUs", ""});
    } else if (!in_unit_interval(c.scale_up.efficiency)) {
      out.push_back({"scale_up/efficiency", "must be in (0, 1]", "1 = line rate"});
    } else if (!(c.scale_up.bw_bytes_per_s * c.scale_up.efficiency >= kMinLinkBytesPerS)) {
      out.push_back(too_slow("scale_up/bandwidth", "bandwidth", c.scale_up.bw_bytes_per_s,
                             c.scale_up.efficiency));
    }
    if (c.scale_up.latency_s < 0) out.push_back({"scale_up/latency", "must be >= 0", ""});
  }
  const long long gpus = c.total_gpus();
  if (gpus <= domain) return out;  // one NVLink domain: no scale-out needed
  const ScaleOutSpec& so = c.scale_out;
  if (so.nics_per_node <= 0) {
    out.push_back({"scale_out/nics_per_node",
                   "must be positive: the GPUs span several NVLink "
                   "domains and need a network",
                   ""});
    return out;
  }
  if (so.nics_per_node <= c.gpus_per_node ? c.gpus_per_node % so.nics_per_node != 0
                                          : so.nics_per_node % c.gpus_per_node != 0) {
    out.push_back({"scale_out/nics_per_node",
                   std::to_string(so.nics_per_node) + " NICs do not split evenly over " +
                       std::to_string(c.gpus_per_node) + " GPUs per node",
                   "use a divisor or a multiple of gpus_per_node"});
  }
  const double nic_cap = so.nic_bw_bytes_per_s * so.efficiency;
  if (!(so.nic_bw_bytes_per_s > 0)) {
    out.push_back({"scale_out/nic_bandwidth", "must be positive", ""});
  } else if (!in_unit_interval(so.efficiency)) {
    out.push_back({"scale_out/efficiency", "must be in (0, 1]", "1 = line rate"});
  } else if (!(nic_cap >= kMinLinkBytesPerS)) {
    out.push_back(
        too_slow("scale_out/nic_bandwidth", "nic_bandwidth", so.nic_bw_bytes_per_s, so.efficiency));
  }
  if (so.latency_s < 0) out.push_back({"scale_out/latency", "must be >= 0", ""});
  if (so.tiers.empty()) {
    out.push_back({"scale_out/tiers", "is empty but the cluster has several NVLink domains",
                   "add at least one tier, e.g. {\"name\": \"leaf\", \"nodes\": 0}"});
    return out;
  }
  int inner = 1;
  // A tier link carries at least one NIC's share, divided by every
  // oversubscription on the way up.
  double least_tier_cap = nic_cap;
  for (size_t t = 0; t < so.tiers.size(); ++t) {
    const TierSpec& tier = so.tiers[t];
    const std::string path = "scale_out/tiers/" + std::to_string(t);
    if (tier.nodes < 0) {
      out.push_back({path + "/nodes", "must be >= 0", "0 means all nodes"});
      continue;
    }
    const int nodes = tier.nodes == 0 ? std::max(c.nodes, 1) : tier.nodes;
    if (nodes % inner != 0 && nodes < c.nodes) {
      out.push_back({path + "/nodes",
                     std::to_string(nodes) +
                         " nodes per group is not a multiple of the inner "
                         "tier's " +
                         std::to_string(inner),
                     "tier groups must nest"});
    }
    if (!(tier.oversubscription > 0)) {
      out.push_back({path + "/oversubscription", "must be positive", "1 = non-blocking"});
    } else if (t == 0 && tier.oversubscription != 1.0) {
      out.push_back({path + "/oversubscription",
                     "the first tier's downlinks are the NIC links; oversubscription there has no "
                     "meaning",
                     "put the downlink:uplink ratio on the tier above (the groups below it)"});
    } else if (t > 0 && nic_cap >= kMinLinkBytesPerS) {
      least_tier_cap /= tier.oversubscription;
      if (!(least_tier_cap >= kMinLinkBytesPerS)) {
        out.push_back({path + "/oversubscription",
                       "leaves uplinks of less than 1 B/s (the NIC bandwidth divided by the "
                       "oversubscriptions up to this tier)",
                       "oversubscription is downlink:uplink, e.g. 7 for 1:7"});
      }
    }
    inner = std::max(inner, nodes);
  }
  const int outer = so.tiers.back().nodes;
  if (outer != 0 && outer < c.nodes) {
    out.push_back({"scale_out/tiers/" + std::to_string(so.tiers.size() - 1) + "/nodes",
                   "the outermost tier joins only " + std::to_string(outer) + " of " +
                       std::to_string(c.nodes) + " nodes",
                   "set it to 0 (all nodes) or add a tier above"});
  }
  if (so.rail_optimized && so.tiers.size() == 1 && so.nics_per_node > 1 &&
      domain < c.gpus_per_node) {
    out.push_back({"scale_out/rail_optimized",
                   "rails are separate first-tier switches with no tier above and NVLink cannot "
                   "reach a GPU on another rail (domain smaller than a node)",
                   "add a spine tier or make scale_up.domain cover the node"});
  }
  return out;
}

}  // namespace podsim::hwmodels
