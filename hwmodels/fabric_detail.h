// What the fabric's construction (fabric.cc), its routing (fabric_routing.cc)
// and its validation (fabric_validate.cc) share; internal to hwmodels/.
#pragma once

#include <boost/graph/compressed_sparse_row_graph.hpp>
#include <cstdint>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "hwmodels/fabric.h"

namespace podsim::hwmodels::fabric_detail {

inline constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();

// Directed graph of the fabric, compressed sparse rows (two arrays, no
// per-edge allocation: ~150k edges for 24K GPUs); the edge property is the
// FabricLink index.
using Graph = boost::compressed_sparse_row_graph<boost::directedS, boost::no_property, uint32_t,
                                                 boost::no_property, uint32_t, uint32_t>;

/// A rate as "%.4g GB/s".
std::string format_rate(double bytes_per_s);

/// The nodes a fabric builds: those of GPUs 0..options.gpus-1, in whole
/// NVLink domains (all nodes when options.gpus is 0).
int64_t built_nodes(const ClusterSpec& spec, const FabricOptions& options);

/// A torus shape as "16x16x24".
std::string shape_text(const std::vector<int>& shape);

}  // namespace podsim::hwmodels::fabric_detail

namespace podsim::hwmodels {

struct Fabric::Impl {
  ClusterSpec spec;
  FabricOptions options;
  int gpn = 0;     // GPUs per node
  int npn = 0;     // NICs per node (0 = no scale-out built)
  int domain = 0;  // GPUs per NVLink domain
  int gpus_per_nic = 1;
  int nics_per_gpu = 1;
  int64_t gpus = 0;
  bool has_nvlink = false;
  bool has_network = false;
  ScaleUpTopology topology = ScaleUpTopology::kSwitch;
  TorusGrid grid;               // every slice's (kTorus)
  std::vector<int> tier_nodes;  // nodes per group, resolved (0 -> all)

  std::vector<FabricVertex> vertices;
  std::vector<FabricLink> links;
  std::vector<uint32_t> nvl_up, nvl_down;    // per GPU (kSwitch)
  std::vector<uint32_t> mesh;                // [gpu x domain + local dst] (kMesh)
  std::vector<uint32_t> ici;                 // [chip x 6 + 2 axis + (0: +, 1: -)] (kTorus)
  std::vector<uint32_t> pcie_up, pcie_down;  // per GPU-NIC attachment
  std::vector<uint32_t> nic_up, nic_down;    // per NIC
  std::vector<uint32_t> nic_switch;          // per NIC: first-tier switch vertex
  std::vector<uint32_t> up_link, down_link;  // per vertex (switches), kNone at top
  uint32_t first_nvswitch = 0, first_nic = 0;
  std::unique_ptr<fabric_detail::Graph> graph;

  uint32_t add_vertex(FabricVertex v) {
    vertices.push_back(v);
    return static_cast<uint32_t>(vertices.size() - 1);
  }
  uint32_t add_link(uint32_t from, uint32_t to, LinkKind kind, double cap, double lat,
                    bool constrained) {
    links.push_back(FabricLink{from, to, kind, cap, lat, constrained});
    return static_cast<uint32_t>(links.size() - 1);
  }

  int node_of(int64_t gpu) const { return static_cast<int>(gpu / gpn); }
  int local_of(int64_t gpu) const { return static_cast<int>(gpu % gpn); }

  // Local NIC index (rail) of a GPU's j-th NIC.
  int local_nic(int local_gpu, int j) const {
    if (nics_per_gpu > 1) return local_gpu * nics_per_gpu + j;
    return local_gpu / gpus_per_nic;
  }
  int pick(uint64_t hash) const {
    return static_cast<int>(hash % static_cast<uint64_t>(nics_per_gpu));
  }
  int64_t nic_of(int64_t gpu, uint64_t hash) const {
    return static_cast<int64_t>(node_of(gpu)) * npn + local_nic(local_of(gpu), pick(hash));
  }
  uint32_t pcie_index(int64_t gpu, int j) const {
    return static_cast<uint32_t>(gpu * nics_per_gpu + j);
  }
  void check_gpu(int64_t gpu) const {
    if (gpu < 0 || gpu >= gpus) {
      throw std::out_of_range("fabric: GPU " + std::to_string(gpu) + " is outside 0.." +
                              std::to_string(gpus - 1));
    }
  }
  FabricPath path(int64_t src, int64_t dst, uint64_t hash) const;
  // Links from src to dst inside their (common) scale-up domain, appended.
  void push_scale_up(int64_t src, int64_t dst, FabricPath& p) const;
};

}  // namespace podsim::hwmodels
