#include "hwmodels/fabric.h"

#include <algorithm>
#include <array>
#include <boost/graph/compressed_sparse_row_graph.hpp>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <sstream>
#include <stdexcept>

#include "hwmodels/fabric_detail.h"
#include "sim/ceil_div.h"

namespace podsim::hwmodels {
namespace {

/// Capacities of the tier uplinks of the whole cluster, built or not: a
/// tier-0 switch takes its NICs' links, a group above the sum of its
/// children's uplinks, each uplink that over the oversubscription of the tier
/// above. Sums run term by term in the order the links are laid out, as
/// adding them up link by link does; groups differ only in how many nodes
/// they hold (the cluster's last group may be partial), so each tier keeps
/// the two values it needs.
class TierCapacities {
 public:
  TierCapacities(const ClusterSpec& spec, const std::vector<int>& tier_nodes, double nic_cap)
      : spec_(spec), tier_nodes_(tier_nodes), nic_cap_(nic_cap) {}

  /// Uplink capacity of group `group` of tier t into tier t+1.
  double uplink(int t, int64_t group) const {
    const int64_t per = tier_nodes_[static_cast<size_t>(t)];
    const int64_t nodes = std::min(per, spec_.nodes - group * per);
    return below(t, nodes) / spec_.scale_out.tiers[static_cast<size_t>(t + 1)].oversubscription;
  }

 private:
  /// What a tier-t switch of a group of `nodes` nodes takes from below.
  double below(int t, int64_t nodes) const {
    const auto key = std::make_pair(t, nodes);
    if (const auto it = memo_.find(key); it != memo_.end()) return it->second;
    double sum = 0;
    if (t == 0) {
      // One NIC per node on a rail switch; every NIC of the node otherwise.
      const int64_t links =
          spec_.scale_out.rail_optimized ? nodes : nodes * spec_.scale_out.nics_per_node;
      sum = repeated_sum(0.0, nic_cap_, links);
    } else {
      const int64_t per = tier_nodes_[static_cast<size_t>(t - 1)];
      const int64_t switches =
          (t == 1 && spec_.scale_out.rail_optimized) ? spec_.scale_out.nics_per_node : 1;
      sum = repeated_sum(0.0, uplink_of(t - 1, per), nodes / per * switches);
      if (nodes % per != 0) sum = repeated_sum(sum, uplink_of(t - 1, nodes % per), switches);
    }
    memo_.emplace(key, sum);
    return sum;
  }
  double uplink_of(int t, int64_t nodes) const {
    return below(t, nodes) / spec_.scale_out.tiers[static_cast<size_t>(t + 1)].oversubscription;
  }
  /// `start` plus `count` terms of `value`, added one by one (past a
  /// million terms, a product: within 1e-10 of the sum, and not slow).
  static double repeated_sum(double start, double value, int64_t count) {
    if (count > 1'000'000) return start + value * static_cast<double>(count);
    for (int64_t i = 0; i < count; ++i) start += value;
    return start;
  }

  const ClusterSpec& spec_;
  const std::vector<int>& tier_nodes_;
  double nic_cap_;
  mutable std::map<std::pair<int, int64_t>, double> memo_;
};

}  // namespace

namespace fabric_detail {

std::string format_rate(double bytes_per_s) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4g GB/s", bytes_per_s / 1e9);
  return buf;
}

/// The nodes a fabric builds: those of GPUs 0..options.gpus-1, in whole
/// NVLink domains (all nodes when options.gpus is 0).
int64_t built_nodes(const ClusterSpec& spec, const FabricOptions& options) {
  if (options.gpus <= 0 || spec.gpus_per_node <= 0) return spec.nodes;
  const int domain = spec.scale_up_domain();
  const int64_t domain_nodes = std::max(1, domain / spec.gpus_per_node);
  const int64_t needed = ceil_div(options.gpus, spec.gpus_per_node);
  return std::min<int64_t>(spec.nodes, ceil_div(needed, domain_nodes) * domain_nodes);
}

std::string shape_text(const std::vector<int>& shape) {
  std::string out;
  for (int a : shape) {
    if (!out.empty()) out += 'x';
    out += std::to_string(a);
  }
  return out;
}

}  // namespace fabric_detail

using fabric_detail::built_nodes;
using fabric_detail::format_rate;
using fabric_detail::Graph;
using fabric_detail::kNone;
using fabric_detail::shape_text;

std::string_view to_string(LinkKind kind) {
  switch (kind) {
    case LinkKind::kNvlinkUp:
      return "nvlink_up";
    case LinkKind::kNvlinkDown:
      return "nvlink_down";
    case LinkKind::kPcieUp:
      return "pcie_up";
    case LinkKind::kPcieDown:
      return "pcie_down";
    case LinkKind::kNicUp:
      return "nic_up";
    case LinkKind::kNicDown:
      return "nic_down";
    case LinkKind::kTierUp:
      return "tier_up";
    case LinkKind::kTierDown:
      return "tier_down";
    case LinkKind::kMesh:
      return "mesh";
    case LinkKind::kIci:
      return "ici";
  }
  return "link";
}

Fabric::Fabric(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Fabric::Fabric(Fabric&&) noexcept = default;
Fabric& Fabric::operator=(Fabric&&) noexcept = default;
Fabric::~Fabric() = default;

Fabric Fabric::build(const ClusterSpec& spec, FabricOptions options) {
  const std::vector<SpecProblem> problems = validate(spec, options);
  if (!problems.empty()) {
    std::string msg = "cluster '" + spec.name + "' is not a valid fabric:";
    for (const SpecProblem& p : problems) msg += "\n  " + p.to_string();
    throw std::invalid_argument(msg);
  }
  auto m = std::make_unique<Impl>();
  m->spec = spec;
  m->options = options;
  m->gpn = spec.gpus_per_node;
  m->domain = spec.scale_up_domain();
  m->topology = spec.scale_up.topology;
  m->has_nvlink = m->domain > 1;
  // A single NVLink domain needs no network (validate() does not check the
  // scale-out part then, so none is built).
  m->has_network = spec.total_gpus() > m->domain;
  const int64_t nodes = built_nodes(spec, options);
  m->gpus = nodes * m->gpn;
  const ScaleOutSpec& so = spec.scale_out;
  if (m->has_network) {
    m->npn = so.nics_per_node;
    m->gpus_per_nic = std::max(1, m->gpn / m->npn);
    m->nics_per_gpu = std::max(1, m->npn / m->gpn);
  }
  const bool prune = options.prune_unconstrained;

  // Vertices: GPUs first, so a GPU's vertex index is its id. Links: two per
  // GPU port (NVLink, PCIe to each NIC it reaches) and per NIC, fewer for the
  // switches above.
  const auto gpus = static_cast<size_t>(m->gpus);
  const size_t nics_built = m->has_network ? static_cast<size_t>(nodes * m->npn) : 0;
  m->vertices.reserve(gpus * 2 + nics_built);
  m->links.reserve(2 * (gpus + gpus * static_cast<size_t>(m->nics_per_gpu) + 2 * nics_built));
  for (int64_t g = 0; g < m->gpus; ++g) m->add_vertex({VertexKind::kGpu, -1, g, -1});
  m->first_nvswitch = static_cast<uint32_t>(m->vertices.size());
  const int64_t domains = (m->gpus + m->domain - 1) / m->domain;
  const bool switched = m->has_nvlink && m->topology == ScaleUpTopology::kSwitch;
  if (switched) {
    for (int64_t d = 0; d < domains; ++d) m->add_vertex({VertexKind::kNvSwitch, -1, d, -1});
  }
  m->first_nic = static_cast<uint32_t>(m->vertices.size());
  const int64_t nics = m->has_network ? nodes * m->npn : 0;
  for (int64_t n = 0; n < nics; ++n) {
    m->add_vertex({VertexKind::kNic, -1, n, static_cast<int>(n % m->npn)});
  }

  // Scale-up links.
  const double nvl_cap = spec.scale_up.bw_bytes_per_s * spec.scale_up.efficiency;
  const double nvl_lat = spec.scale_up.latency_s / 2;
  if (m->has_nvlink && m->topology == ScaleUpTopology::kMesh) {
    const double cap = nvl_cap / (m->domain - 1);
    m->mesh.assign(static_cast<size_t>(m->gpus * m->domain), kNone);
    for (int64_t g = 0; g < m->gpus; ++g) {
      const int64_t first = g / m->domain * m->domain;
      for (int j = 0; j < m->domain; ++j) {
        if (first + j == g) continue;
        m->mesh[static_cast<size_t>(g * m->domain + j)] =
            m->add_link(static_cast<uint32_t>(g), static_cast<uint32_t>(first + j), LinkKind::kMesh,
                        cap, spec.scale_up.latency_s, true);
      }
    }
  }
  if (m->has_nvlink && m->topology == ScaleUpTopology::kTorus) {
    m->grid.shape = torus_shape(spec.scale_up.torus, m->domain);
    m->grid.wraps = torus_wraps(spec.scale_up.torus, m->grid.shape);
    const double cap = nvl_cap / (2 * m->grid.dims());
    m->ici.assign(static_cast<size_t>(m->gpus * 6), kNone);
    for (int64_t g = 0; g < m->gpus; ++g) {
      const int64_t first = g / m->domain * m->domain;
      const std::array<int, 3> at = m->grid.coords(g - first);
      for (int axis = 0; axis < m->grid.dims(); ++axis) {
        const int n = m->grid.shape[static_cast<size_t>(axis)];
        const bool wraps = m->grid.wraps[static_cast<size_t>(axis)];
        for (const int dir : {+1, -1}) {
          const int to = at[static_cast<size_t>(axis)] + dir;
          if ((to < 0 || to >= n) && !wraps) continue;
          std::array<int, 3> next = at;
          next[static_cast<size_t>(axis)] = (to + n) % n;
          if (next == at) continue;
          m->ici[static_cast<size_t>(g * 6 + 2 * axis + (dir > 0 ? 0 : 1))] = m->add_link(
              static_cast<uint32_t>(g), static_cast<uint32_t>(first + m->grid.chip(next)),
              LinkKind::kIci, cap, spec.scale_up.latency_s, true);
        }
      }
    }
  }
  if (switched) {
    m->nvl_up.resize(static_cast<size_t>(m->gpus));
    m->nvl_down.resize(static_cast<size_t>(m->gpus));
    for (int64_t g = 0; g < m->gpus; ++g) {
      const auto gv = static_cast<uint32_t>(g);
      const auto sw = static_cast<uint32_t>(m->first_nvswitch + g / m->domain);
      m->nvl_up[gv] = m->add_link(gv, sw, LinkKind::kNvlinkUp, nvl_cap, nvl_lat, true);
      m->nvl_down[gv] = m->add_link(sw, gv, LinkKind::kNvlinkDown, nvl_cap, nvl_lat, true);
    }
  }

  if (m->has_network) {
    const double nic_cap = so.nic_bw_bytes_per_s * so.efficiency;
    const double hop_lat = so.latency_s / 2;
    // GPU <-> NIC: never a bottleneck (a NIC link carries everything of the
    // GPUs behind it), latency inside NCCL's network step latency.
    m->pcie_up.resize(static_cast<size_t>(m->gpus * m->nics_per_gpu));
    m->pcie_down.resize(m->pcie_up.size());
    for (int64_t g = 0; g < m->gpus; ++g) {
      for (int j = 0; j < m->nics_per_gpu; ++j) {
        const int64_t nic =
            static_cast<int64_t>(m->node_of(g)) * m->npn + m->local_nic(m->local_of(g), j);
        const auto nv = static_cast<uint32_t>(m->first_nic + nic);
        const auto gv = static_cast<uint32_t>(g);
        const uint32_t k = m->pcie_index(g, j);
        m->pcie_up[k] = m->add_link(gv, nv, LinkKind::kPcieUp, nic_cap, 0.0, !prune);
        m->pcie_down[k] = m->add_link(nv, gv, LinkKind::kPcieDown, nic_cap, 0.0, !prune);
      }
    }
    // Tier switches, innermost first: the groups that hold built nodes.
    const int tiers = static_cast<int>(so.tiers.size());
    for (const TierSpec& t : so.tiers) {
      m->tier_nodes.push_back(t.nodes == 0 ? spec.nodes : std::min(t.nodes, spec.nodes));
    }
    const bool rails = so.rail_optimized;
    const TierCapacities caps(spec, m->tier_nodes, nic_cap);
    std::vector<std::vector<uint32_t>> tier_switch(static_cast<size_t>(tiers));
    for (int t = 0; t < tiers; ++t) {
      const int per = m->tier_nodes[static_cast<size_t>(t)];
      const int64_t groups = ceil_div(nodes, per);
      const int per_group = (t == 0 && rails) ? m->npn : 1;
      for (int64_t g = 0; g < groups; ++g) {
        for (int r = 0; r < per_group; ++r) {
          tier_switch[static_cast<size_t>(t)].push_back(
              m->add_vertex({VertexKind::kSwitch, t, g, per_group > 1 ? r : -1}));
        }
      }
    }
    m->up_link.assign(m->vertices.size(), kNone);
    m->down_link.assign(m->vertices.size(), kNone);
    // NIC <-> first tier.
    m->nic_up.resize(static_cast<size_t>(nics));
    m->nic_down.resize(static_cast<size_t>(nics));
    m->nic_switch.resize(static_cast<size_t>(nics));
    const int per0 = m->tier_nodes[0];
    for (int64_t n = 0; n < nics; ++n) {
      const int64_t node = n / m->npn;
      const int rail = static_cast<int>(n % m->npn);
      const int64_t group = node / per0;
      const uint32_t sw =
          tier_switch[0][static_cast<size_t>(group * (rails ? m->npn : 1) + (rails ? rail : 0))];
      const auto nv = static_cast<uint32_t>(m->first_nic + n);
      m->nic_up[static_cast<size_t>(n)] =
          m->add_link(nv, sw, LinkKind::kNicUp, nic_cap, hop_lat, true);
      m->nic_down[static_cast<size_t>(n)] =
          m->add_link(sw, nv, LinkKind::kNicDown, nic_cap, hop_lat, true);
      m->nic_switch[static_cast<size_t>(n)] = sw;
    }
    // Tier t -> t+1 aggregate links: capacity = what the group can take from
    // below / oversubscription of the tier above. With oversubscription <= 1
    // the link carries at most what its feeders can (each flow on it crossed
    // exactly one of them), so it can never bind: not constrained.
    for (int t = 0; t + 1 < tiers; ++t) {
      const int per = m->tier_nodes[static_cast<size_t>(t)];
      const int per_up = m->tier_nodes[static_cast<size_t>(t + 1)];
      const double os = so.tiers[static_cast<size_t>(t + 1)].oversubscription;
      for (uint32_t sw : tier_switch[static_cast<size_t>(t)]) {
        const FabricVertex& v = m->vertices[sw];
        const int64_t parent_group = v.index * per / per_up;
        // Tiers above the first have one (aggregate) switch per group.
        const uint32_t parent =
            tier_switch[static_cast<size_t>(t + 1)][static_cast<size_t>(parent_group)];
        const double cap = caps.uplink(t, v.index);
        const bool constrained = !prune || os > 1.0;
        m->up_link[sw] = m->add_link(sw, parent, LinkKind::kTierUp, cap, hop_lat, constrained);
        m->down_link[sw] = m->add_link(parent, sw, LinkKind::kTierDown, cap, hop_lat, constrained);
      }
    }
  }

  // The graph: one edge per link, property = link index.
  std::vector<std::pair<uint32_t, uint32_t>> ends;
  std::vector<uint32_t> ids;
  ends.reserve(m->links.size());
  ids.reserve(m->links.size());
  for (uint32_t l = 0; l < m->links.size(); ++l) {
    ends.emplace_back(m->links[l].from, m->links[l].to);
    ids.push_back(l);
  }
  m->graph = std::make_unique<Graph>(boost::edges_are_unsorted_multi_pass, ends.begin(), ends.end(),
                                     ids.begin(), static_cast<uint32_t>(m->vertices.size()));
  return Fabric(std::move(m));
}

const ClusterSpec& Fabric::spec() const { return impl_->spec; }
const FabricOptions& Fabric::options() const { return impl_->options; }
int64_t Fabric::gpu_count() const { return impl_->gpus; }
int Fabric::node_of(int64_t gpu) const {
  impl_->check_gpu(gpu);
  return impl_->node_of(gpu);
}
int64_t Fabric::domain_of(int64_t gpu) const {
  impl_->check_gpu(gpu);
  return gpu / impl_->domain;
}
int Fabric::domain_size() const { return impl_->domain; }
ScaleUpTopology Fabric::topology() const { return impl_->topology; }
const TorusGrid& Fabric::torus() const { return impl_->grid; }
int Fabric::local_index(int64_t gpu) const {
  impl_->check_gpu(gpu);
  return impl_->local_of(gpu);
}
int64_t Fabric::nic_of(int64_t gpu, uint64_t flow_hash) const {
  impl_->check_gpu(gpu);
  return impl_->has_network ? impl_->nic_of(gpu, flow_hash) : -1;
}
int Fabric::rail_of(int64_t gpu, uint64_t flow_hash) const {
  const int64_t nic = nic_of(gpu, flow_hash);
  return nic < 0 ? -1 : static_cast<int>(nic % impl_->npn);
}
size_t Fabric::vertex_count() const { return impl_->vertices.size(); }
size_t Fabric::link_count() const { return impl_->links.size(); }
const FabricVertex& Fabric::vertex(uint32_t v) const { return impl_->vertices.at(v); }
const FabricLink& Fabric::link(uint32_t l) const { return impl_->links.at(l); }

std::string Fabric::vertex_name(uint32_t v) const {
  const FabricVertex& x = vertex(v);
  switch (x.kind) {
    case VertexKind::kGpu:
      return "gpu" + std::to_string(x.index);
    case VertexKind::kNvSwitch:
      return "nvswitch" + std::to_string(x.index);
    case VertexKind::kNic:
      return "nic" + std::to_string(x.index) + "(node" + std::to_string(x.index / impl_->npn) +
             ",rail" + std::to_string(x.rail) + ")";
    case VertexKind::kSwitch: {
      const std::string& name = impl_->spec.scale_out.tiers[static_cast<size_t>(x.tier)].name;
      std::string out =
          (name.empty() ? "tier" + std::to_string(x.tier) : name) + std::to_string(x.index);
      if (x.rail >= 0) out += ".rail" + std::to_string(x.rail);
      return out;
    }
  }
  return "?";
}

std::string Fabric::describe_link(uint32_t l) const {
  const FabricLink& k = link(l);
  char lat[32];
  std::snprintf(lat, sizeof lat, "%.3g us", k.latency_s * 1e6);
  return vertex_name(k.from) + " -> " + vertex_name(k.to) + " " + std::string(to_string(k.kind)) +
         " " + format_rate(k.capacity_bytes_per_s) + " " + lat +
         (k.constrained ? " constrained" : " unconstrained");
}

std::string Fabric::summary() const {
  const Impl& m = *impl_;
  size_t by_kind[4] = {0, 0, 0, 0};
  for (const FabricVertex& v : m.vertices) ++by_kind[static_cast<int>(v.kind)];
  size_t constrained = 0;
  for (const FabricLink& l : m.links) constrained += l.constrained ? 1 : 0;
  std::ostringstream os;
  const int64_t domains = (m.gpus + m.domain - 1) / m.domain;
  os << m.spec.name << ": " << m.gpus << " GPUs, " << domains;
  switch (m.topology) {
    case ScaleUpTopology::kSwitch:
      os << " NVSwitch domains of " << m.domain;
      break;
    case ScaleUpTopology::kMesh:
      os << " mesh domains of " << m.domain;
      break;
    case ScaleUpTopology::kTorus:
      os << " torus slices of " << shape_text(m.grid.shape);
      break;
  }
  os << ", " << by_kind[2] << " NICs, " << by_kind[3] << " switches; " << m.links.size()
     << " links (" << constrained << " constrained)\n";
  // One line per tier with the uplink capacity of its first group.
  for (size_t t = 0; t < m.tier_nodes.size(); ++t) {
    os << "  tier " << t << " '" << m.spec.scale_out.tiers[t].name << "': " << m.tier_nodes[t]
       << " nodes per group";
    for (uint32_t v = 0; v < m.vertices.size(); ++v) {
      if (m.vertices[v].kind == VertexKind::kSwitch && m.vertices[v].tier == static_cast<int>(t)) {
        if (m.up_link[v] != kNone) {
          os << ", uplink " << format_rate(m.links[m.up_link[v]].capacity_bytes_per_s)
             << (m.links[m.up_link[v]].constrained ? "" : " (never a bottleneck)");
        }
        break;
      }
    }
    os << "\n";
  }
  return os.str();
}

}  // namespace podsim::hwmodels
