// Routing over a built fabric: the links of a path from one GPU to another
// (inside the scale-up domain, or NIC, tiers and back), hop counts by
// breadth-first search, and a fabric instantiated as engine links. Building
// the fabric is fabric.cc.
#include <boost/graph/breadth_first_search.hpp>
#include <boost/graph/visitors.hpp>
#include <cstdint>
#include <vector>

#include "hwmodels/fabric.h"
#include "hwmodels/fabric_detail.h"

namespace podsim::hwmodels {

using fabric_detail::Graph;
using fabric_detail::kNone;

FabricPath Fabric::Impl::path(int64_t src, int64_t dst, uint64_t hash) const {
  FabricPath p;
  auto push = [&](uint32_t l) {
    p.links.push_back(l);
    p.latency_s += links[l].latency_s;
  };
  if (src == kInNetwork || dst == kInNetwork) {
    const int64_t gpu = src == kInNetwork ? dst : src;
    if (gpu == kInNetwork) throw std::invalid_argument("fabric: both endpoints are in-network");
    check_gpu(gpu);
    if (!has_nvlink || topology != ScaleUpTopology::kSwitch) {
      throw std::invalid_argument("fabric: in-network endpoint needs an NVSwitch domain");
    }
    push(src == kInNetwork ? nvl_down[static_cast<size_t>(gpu)] : nvl_up[static_cast<size_t>(gpu)]);
    return p;
  }
  check_gpu(src);
  check_gpu(dst);
  if (src == dst) return p;
  if (has_nvlink && src / domain == dst / domain) {
    push_scale_up(src, dst, p);
    return p;
  }
  if (!has_network) throw std::logic_error("fabric: no network between NVLink domains");
  const int j_src = pick(hash);
  const int j_dst = pick(hash);
  int64_t from = src;
  int64_t nic_a = nic_of(src, hash);
  const int64_t nic_b = nic_of(dst, hash);
  int j_from = j_src;
  const int rail_b = static_cast<int>(nic_b % npn);
  if (spec.scale_out.rail_optimized && nic_a % npn != rail_b) {
    // PXN: hop over NVLink to the GPU of this node that sits on the
    // destination's rail (same position among the GPUs sharing that NIC).
    const int node = node_of(src);
    int local = 0;
    int j = 0;
    if (nics_per_gpu > 1) {
      local = rail_b / nics_per_gpu;
      j = rail_b % nics_per_gpu;
    } else {
      local = rail_b * gpus_per_nic + local_of(src) % gpus_per_nic;
    }
    const int64_t proxy = static_cast<int64_t>(node) * gpn + local;
    if (proxy == src || (has_nvlink && proxy / domain == src / domain)) {
      if (proxy != src) push_scale_up(src, proxy, p);  // else: another NIC of the same GPU
      from = proxy;
      j_from = j;
      nic_a = static_cast<int64_t>(node) * npn + rail_b;
    }
  }
  push(pcie_up[pcie_index(from, j_from)]);
  push(nic_up[static_cast<size_t>(nic_a)]);
  uint32_t s = nic_switch[static_cast<size_t>(nic_a)];
  uint32_t d = nic_switch[static_cast<size_t>(nic_b)];
  std::vector<uint32_t> downs;
  while (s != d) {
    if (up_link[s] == kNone || down_link[d] == kNone) {
      throw std::logic_error("fabric: no route between GPU " + std::to_string(src) + " and GPU " +
                             std::to_string(dst));
    }
    push(up_link[s]);
    downs.push_back(down_link[d]);
    s = links[up_link[s]].to;
    d = links[down_link[d]].from;
  }
  for (auto it = downs.rbegin(); it != downs.rend(); ++it) push(*it);
  push(nic_down[static_cast<size_t>(nic_b)]);
  push(pcie_down[pcie_index(dst, j_dst)]);
  return p;
}

void Fabric::Impl::push_scale_up(int64_t src, int64_t dst, FabricPath& p) const {
  auto push = [&](uint32_t l) {
    p.links.push_back(l);
    p.latency_s += links[l].latency_s;
  };
  switch (topology) {
    case ScaleUpTopology::kSwitch:
      push(nvl_up[static_cast<size_t>(src)]);
      push(nvl_down[static_cast<size_t>(dst)]);
      return;
    case ScaleUpTopology::kMesh:
      push(mesh[static_cast<size_t>(src * domain + dst % domain)]);
      return;
    case ScaleUpTopology::kTorus: {
      // Dimension-order routing: all of x, then y, then z.
      const int64_t first = src / domain * domain;
      std::array<int, 3> at = grid.coords(src - first);
      const std::array<int, 3> to = grid.coords(dst - first);
      for (int axis = 0; axis < grid.dims(); ++axis) {
        const auto a = static_cast<size_t>(axis);
        const int n = grid.shape[a];
        int steps = grid.steps(axis, at[a], to[a]);
        const int dir = steps > 0 ? 1 : -1;
        for (; steps != 0; steps -= dir) {
          const int64_t chip = first + grid.chip(at);
          push(ici[static_cast<size_t>(chip * 6 + 2 * axis + (dir > 0 ? 0 : 1))]);
          at[a] = (at[a] + dir + n) % n;
        }
      }
      return;
    }
  }
}

FabricPath Fabric::path(int64_t src, int64_t dst, uint64_t flow_hash) const {
  return impl_->path(src, dst, flow_hash);
}

int Fabric::bfs_hop_count(int64_t src, int64_t dst) const {
  impl_->check_gpu(src);
  impl_->check_gpu(dst);
  std::vector<int> dist(impl_->vertices.size(), -1);
  dist[static_cast<size_t>(src)] = 0;
  const Graph& g = *impl_->graph;
  boost::breadth_first_search(
      g, static_cast<Graph::vertex_descriptor>(src),
      boost::visitor(boost::make_bfs_visitor(boost::record_distances(
          boost::make_iterator_property_map(dist.begin(), boost::get(boost::vertex_index, g)),
          boost::on_tree_edge()))));
  return dist[static_cast<size_t>(dst)];
}

FabricInstance Fabric::instantiate(sim::Engine& engine,
                                   std::span<const double> capacity_factor) const {
  return FabricInstance(this, &engine,
                        std::vector<double>(capacity_factor.begin(), capacity_factor.end()));
}

std::vector<uint32_t> Fabric::nic_links(int64_t nic) const {
  std::vector<uint32_t> out;
  for (uint32_t l = 0; l < impl_->links.size(); ++l) {
    const FabricLink& k = impl_->links[l];
    const uint32_t end = k.kind == LinkKind::kNicUp ? k.from : k.to;
    const FabricVertex& v = impl_->vertices[end];
    if ((k.kind == LinkKind::kNicUp || k.kind == LinkKind::kNicDown) &&
        v.kind == VertexKind::kNic && v.index == nic) {
      out.push_back(l);
    }
  }
  return out;
}

Route FabricInstance::route(int64_t src, int64_t dst, uint64_t flow_hash) const {
  const FabricPath p = fabric_->path(src, dst, flow_hash);
  Route r;
  r.latency_s = p.latency_s;
  r.hops.reserve(p.links.size());
  for (uint32_t l : p.links) {
    if (has_engine_link(l)) r.hops.push_back(sim::PathHop{engine_link(l), 1});
  }
  return r;
}

double FabricInstance::capacity_factor(uint32_t fabric_link) const {
  return capacity_factor_.empty() ? 1.0 : capacity_factor_.at(fabric_link);
}

bool FabricInstance::has_engine_link(uint32_t fabric_link) const {
  // A degraded link may become the bottleneck its healthy self never was.
  return fabric_->link(fabric_link).constrained || !fabric_->options().prune_unconstrained ||
         capacity_factor(fabric_link) < 1;
}

sim::LinkId FabricInstance::engine_link(uint32_t fabric_link) const {
  if (!has_engine_link(fabric_link)) {
    throw std::invalid_argument("fabric link " + std::to_string(fabric_link) +
                                " has no engine link (never a bottleneck)");
  }
  const auto [it, added] = engine_links_.try_emplace(fabric_link, 0);
  if (added) {
    it->second = engine_
                     ->add_link(fabric_->link(fabric_link).capacity_bytes_per_s *
                                capacity_factor(fabric_link))
                     .index;
  }
  return sim::LinkId{it->second};
}

}  // namespace podsim::hwmodels
