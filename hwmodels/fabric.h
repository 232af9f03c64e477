#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "hwmodels/cluster_spec.h"
#include "hwmodels/spec_problem.h"
#include "hwmodels/torus.h"
#include "sim/engine.h"

namespace podsim::hwmodels {

enum class VertexKind : uint8_t { kGpu, kNvSwitch, kNic, kSwitch };

/// Directed link kinds. "Up" points away from the GPU.
enum class LinkKind : uint8_t {
  kNvlinkUp,    ///< GPU -> its NVSwitch domain
  kNvlinkDown,  ///< NVSwitch domain -> GPU
  kPcieUp,      ///< GPU -> NIC (not a bottleneck: the NIC link is)
  kPcieDown,    ///< NIC -> GPU
  kNicUp,       ///< NIC -> first-tier switch
  kNicDown,     ///< first-tier switch -> NIC
  kTierUp,      ///< aggregate uplink of a tier group into the next tier
  kTierDown,    ///< aggregate downlink from the next tier into a group
  kMesh,        ///< GPU -> GPU of a mesh domain (one direction of a point-to-point link)
  kIci,         ///< chip -> neighbouring chip of a torus slice, one direction
};

std::string_view to_string(LinkKind kind);

struct FabricVertex {
  VertexKind kind = VertexKind::kGpu;
  int tier = -1;      ///< switches: tier index (innermost 0); else -1
  int64_t index = 0;  ///< GPU id, domain id, NIC id, or group id in its tier
  int rail = -1;      ///< NICs and rail switches: the rail; else -1
};

/// One direction of a cable (or of an aggregate of cables).
struct FabricLink {
  uint32_t from = 0;  ///< vertex index
  uint32_t to = 0;    ///< vertex index
  LinkKind kind = LinkKind::kNvlinkUp;
  /// Payload capacity in bytes/s: line rate x the technology's efficiency
  /// (ScaleUpSpec/ScaleOutSpec::efficiency); aggregates sum their members.
  double capacity_bytes_per_s = 0;
  double latency_s = 0;
  /// False when the link can never be the bottleneck of any flow (its
  /// capacity >= the total capacity of the links that feed it); such links
  /// are left out of engine paths (their latency still counts) unless
  /// FabricOptions::prune_unconstrained is false.
  bool constrained = true;
};

/// The links a GPU-to-GPU (or GPU-to-switch) transfer crosses.
struct FabricPath {
  std::vector<uint32_t> links;  ///< fabric link indices, in order, all of them
  double latency_s = 0;         ///< sum of the links' latencies
};

/// An engine path for one flow.
struct Route {
  std::vector<sim::PathHop> hops;  ///< constrained links only
  double latency_s = 0;            ///< all links on the path
};

/// Endpoint meaning "the NVSwitch of the other endpoint's NVLink domain":
/// (gpu, kInNetwork) is the GPU's uplink only, (kInNetwork, gpu) its downlink
/// only. Used by NVLink SHARP (in-switch reduction/multicast).
inline constexpr int64_t kInNetwork = -1;

struct FabricOptions {
  /// Leave links that can never be a bottleneck out of engine paths. Off: every
  /// link becomes an engine link (for checking that pruning changes nothing).
  bool prune_unconstrained = true;
  /// Build only GPUs 0..gpus-1 (rounded up to whole NVLink domains) and what
  /// connects them: their nodes' NICs and the tier groups above those. Every
  /// link built has the capacity it has in the whole cluster (a tier group's
  /// uplink counts all the nodes under it, built or not), so a job on the
  /// first GPUs prices alike; a 10,000,000-node cluster costs an 8-GPU job
  /// nothing. 0 = the whole cluster.
  int64_t gpus = 0;
};

class FabricInstance;

/// The cluster's network as a graph: vertices = GPUs, NVSwitch domains, NICs
/// and switches of each scale-out tier; directed edges = links. Held as a
/// Boost.Graph internally (the header stays free of Boost).
///
/// Scale-up (ScaleUpSpec::topology): a switch domain joins each GPU <-> its
/// domain's NVSwitch at scale_up.bw x efficiency per direction (a
/// non-blocking crossbar: only the GPU ports constrain; NVL72 is one such
/// domain over 18 nodes of 4 GPUs); a mesh domain has one link per ordered
/// pair of its GPUs at bw / (domain - 1) x efficiency (AMD Infinity Fabric);
/// a torus domain is one TPU slice, each chip linked to its neighbours on
/// every axis (and round the wrap where the slice has it, hwmodels/torus.h)
/// at bw / (2 dims) x efficiency, transfers routed dimension by dimension
/// (x, then y, then z; the shorter way round a wrapped axis).
/// Scale-out: nics_per_node NICs per node, gpus_per_node / nics_per_node GPUs
/// per NIC (or several NICs per GPU, picked by flow hash); NIC <-> first-tier
/// switch. Tiers innermost first; a tier-t group holds TierSpec::nodes nodes
/// (0 = all). Rail-optimised: NIC i of every node in a first-tier group goes
/// to that group's rail-i switch, and a transfer between different rails
/// first crosses NVLink to a GPU on the destination's rail (NCCL's PXN).
///
/// ECMP: each tier group's uplinks (and downlinks) are one aggregate link of
/// the summed capacity = downlink capacity / oversubscription of the tier
/// above. This is the fluid limit of perfect spreading over equal-cost
/// paths; NCCL and RoCE/IB fabrics spread a collective over many queue pairs
/// (Llama 3 used 16 flows per GPU pair plus enhanced ECMP [S35]) precisely to
/// approach it, and per-flow hashing over explicit uplinks would add
/// collision noise that depends on the hash, not on the hardware.
///
/// Latency: NVLink half of scale_up.latency_s per direction-link (a mesh or
/// ICI link: all of it, one hop each); every
/// scale-out link (NIC-switch, switch-switch) half of scale_out.latency_s,
/// so NIC -> switch -> NIC costs latency_s and each further switch pair
/// another latency_s; GPU <-> NIC (PCIe) 0.
class Fabric {
 public:
  /// Every problem with `spec` as a fabric built with `options` (empty =
  /// buildable), including a fabric too large to build.
  static std::vector<SpecProblem> validate(const ClusterSpec& spec,
                                           const FabricOptions& options = FabricOptions{});
  /// Throws std::invalid_argument listing validate()'s problems.
  static Fabric build(const ClusterSpec& spec, FabricOptions options = FabricOptions{});

  Fabric(Fabric&&) noexcept;
  Fabric& operator=(Fabric&&) noexcept;
  Fabric(const Fabric&) = delete;
  Fabric& operator=(const Fabric&) = delete;
  ~Fabric();

  const ClusterSpec& spec() const;
  const FabricOptions& options() const;
  int64_t gpu_count() const;
  int node_of(int64_t gpu) const;
  /// NVLink domain of a GPU.
  int64_t domain_of(int64_t gpu) const;
  /// GPUs per NVLink domain (ScaleUpSpec::domain resolved; a torus: its slice).
  int domain_size() const;
  ScaleUpTopology topology() const;
  /// The grid of every slice of a torus fabric (empty shape otherwise); chip
  /// i of a slice is GPU slice x domain_size() + i.
  const TorusGrid& torus() const;
  /// Index of a GPU inside its node.
  int local_index(int64_t gpu) const;
  /// Global NIC a GPU uses (of several, by flow hash); -1 if no scale-out.
  int64_t nic_of(int64_t gpu, uint64_t flow_hash = 0) const;
  /// Rail (NIC index inside the node) of a GPU's NIC; -1 if no scale-out.
  int rail_of(int64_t gpu, uint64_t flow_hash = 0) const;

  size_t vertex_count() const;
  size_t link_count() const;
  const FabricVertex& vertex(uint32_t v) const;
  const FabricLink& link(uint32_t l) const;
  /// "gpu12", "nvswitch1", "nic9(node1,rail1)", "rack3.rail2", "pod0", ...
  std::string vertex_name(uint32_t v) const;
  /// "nic9(node1,rail1) -> rack0.rail1 nic_up 47 GB/s 0.5 us constrained"
  std::string describe_link(uint32_t l) const;
  /// Counts of vertices and links by kind, capacities per tier.
  std::string summary() const;

  /// All links from `src` to `dst` (GPU ids, or kInNetwork on one side).
  /// src == dst gives an empty path.
  FabricPath path(int64_t src, int64_t dst, uint64_t flow_hash = 0) const;
  /// Links on the shortest path between two GPUs found by Boost's breadth-first
  /// search over the graph: an independent check of path(). -1 = unreachable.
  int bfs_hop_count(int64_t src, int64_t dst) const;

  /// The fabric's links on `engine`: each constrained link (every link when
  /// pruning is off) becomes an engine link the first time a route crosses
  /// it, so an engine holds only the links its flows use. `capacity_factor`,
  /// when not empty, scales each link's capacity (by fabric link index; a
  /// degraded part, below 1: such a link gets an engine link even when
  /// unconstrained). The Fabric and the engine must outlive the instance and
  /// stay where they are.
  FabricInstance instantiate(sim::Engine& engine,
                             std::span<const double> capacity_factor = {}) const;
  /// The links between a NIC and its switch, both directions.
  std::vector<uint32_t> nic_links(int64_t nic) const;

 private:
  struct Impl;
  explicit Fabric(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// A fabric's links as links of one engine, added as routes first cross them.
class FabricInstance {
 public:
  /// Engine path (constrained links) and latency (all links) of a transfer.
  Route route(int64_t src, int64_t dst, uint64_t flow_hash = 0) const;
  /// Whether a fabric link gets an engine link (constrained, or pruning off).
  bool has_engine_link(uint32_t fabric_link) const;
  /// The engine link of a fabric link (added now if no route crossed it yet).
  sim::LinkId engine_link(uint32_t fabric_link) const;
  const Fabric& fabric() const { return *fabric_; }

 private:
  friend class Fabric;
  FabricInstance(const Fabric* fabric, sim::Engine* engine, std::vector<double> capacity_factor)
      : fabric_(fabric), engine_(engine), capacity_factor_(std::move(capacity_factor)) {}
  double capacity_factor(uint32_t fabric_link) const;
  const Fabric* fabric_;  // not owned
  sim::Engine* engine_;   // not owned
  // Fabric link -> engine link, filled on first use (a cache: routing stays
  // const for callers, as it was when every link was added up front). A map,
  // not a vector over all links: a collective priced alone touches a few
  // dozen links of a fabric of millions.
  mutable std::unordered_map<uint32_t, uint32_t> engine_links_;
  std::vector<double> capacity_factor_;  // empty: every link at its capacity
};

}  // namespace podsim::hwmodels
