#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hwmodels/fabric.h"
#include "sim/engine.h"

namespace podsim::hwmodels {

/// Collective operations. Sizes follow nccl-tests: `bytes` is the per-rank
/// buffer of all-reduce and broadcast, the total (recvcount x n) of
/// all-gather and reduce-scatter, the per-rank send buffer of all-to-all
/// (S/n to each peer), and what each rank sends to the next of send/recv.
enum class CollectiveOp : uint8_t {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kAllToAll,
  kBroadcast,  ///< from group[0]
  kSendRecv,   ///< rank i sends to rank (i+1) mod n (both ways for n = 2)
};

enum class Algorithm : uint8_t {
  kAuto,          ///< fastest by the closed-form estimate, like NCCL's tuner
  kRing,          ///< pipelined ring; across domains one channel per rail
  kTree,          ///< NCCL double binary tree over domains, chains inside
  kHierarchical,  ///< reduce-scatter in domain, all-reduce across, all-gather in domain
  kNvls,          ///< NVLink SHARP: reduction/multicast in the NVSwitch
  kDirect,        ///< point-to-point (all-to-all, send/recv)
  kTorus,         ///< XLA on a TPU slice: bidirectional rings along each torus axis
};

/// NCCL protocols: LL (8-byte lines, half payload, lowest latency), LL128
/// (128-byte lines, 120 payload), Simple (bulk, highest latency).
enum class Protocol : uint8_t { kLL, kLL128, kSimple };

std::string_view to_string(CollectiveOp op);
std::string_view to_string(Algorithm algorithm);
std::string_view to_string(Protocol protocol);
std::optional<CollectiveOp> parse_collective_op(std::string_view text);
std::optional<Algorithm> parse_algorithm(std::string_view text);

/// nccl-tests bus-bandwidth factor: busbw = algbw x factor (hardware.md 3.1).
double bus_bandwidth_factor(CollectiveOp op, int64_t ranks);

/// NCCL's latency classes (rows of its tuning tables).
enum class LatencyClass : uint8_t { kTree, kRing, kNvls };
inline constexpr int kLatencyClasses = 3;
inline constexpr int kProtocols = 3;

/// Constants of the collective model, plain data. Defaults are NCCL's own
/// model constants from src/graph/tuning.cc, NCCL 2.30.7 ([S42],
/// hardware.md 3.4), converted to seconds; 0 in a latency table where NCCL
/// has none means "protocol not available" for the NVLS class.
struct CollectiveParams {
  using Table = std::array<std::array<double, kProtocols>, kLatencyClasses>;
  /// Fixed cost of one collective call: baseLat[algorithm][protocol].
  Table base_latency_s{{{6.8e-6, 14.0e-6, 8.4e-6},  // tree  LL/LL128/Simple
                        {6.6e-6, 14.0e-6, 8.4e-6},  // ring
                        {0.0, 0.0, 0.0}}};          // NVLS
  /// Latency of one pipeline step over NVLink: hwLat[NVLINK][algo][proto],
  /// for NCCL's own NVLink hop of kNcclNvlinkHopS (for_cluster puts the
  /// cluster's hop in its place).
  Table nvlink_step_latency_s{{{0.6e-6, 1.25e-6, 4.0e-6},  //
                               {0.6e-6, 1.9e-6, 3.4e-6},   //
                               {0.0, 0.0, 25.0e-6}}};
  /// Latency of one step over the network: hwLat[NET][algo][proto]; the
  /// fabric path latency is added (twice for Simple: NCCL's flush).
  Table net_step_latency_s{{{5.0e-6, 8.5e-6, 14.0e-6},  //
                            {2.7e-6, 4.0e-6, 14.0e-6},  //
                            {0.0, 0.0, 18.0e-6}}};
  /// Per-step floor of intra-domain steps once a collective spans domains
  /// (NCCL's netOverhead: 1 us on Intel x86, x3 for Simple).
  double net_overhead_s = 1.0e-6;
  double net_overhead_simple_factor = 3.0;
  /// Payload fraction of each protocol's wire bytes: LL 4 of 8 bytes; LL128
  /// NCCL's 0.92 (120 of 128 bytes less flag overhead); Simple 1.
  std::array<double, kProtocols> protocol_bw_fraction{0.5, 0.92, 1.0};
  /// NVLS bandwidth efficiency, NCCL's model constant (0.85 Hopper, 0.74
  /// Blackwell). With the physical traffic of NVLS all-reduce (S(n+1)/n up
  /// and down each GPU port) it gives 8 x H100 busbw ~486 GB/s against the
  /// measured ~480 [S27][S41].
  double nvls_efficiency = 0.85;
  /// Fixed cost of one XLA collective on a torus slice, on top of one
  /// ScaleUpSpec::latency_s per hop: a v5e all-gather of 32 kB shards over a
  /// 4-chip axis took ~8 us against ~3 us of hops (3 x ~1 us), so ~5 us
  /// (scaling-book "How to think about TPUs", [S24]; measured).
  double ici_base_latency_s = 5.0e-6;
  /// Largest all-to-all simulated flow by flow (n(n-1) flows).
  int64_t max_all_to_all_ranks = 1024;
  /// SMs an NCCL kernel inside one NVLink domain holds while it runs: one
  /// CTA per channel, each on an SM of its own (NCCL's CTAs use up to 640
  /// threads and their own shared memory, leaving no room for a GEMM's CTA).
  /// NCCL's ring search on NVSwitch nodes finds 16 channels and duplicates
  /// them to 32, the MAXCHANNELS cap ("32 coll channels ... 32 p2p channels
  /// per peer" in the NCCL INFO lines at communicator init on 8-GPU nodes).
  /// Compute running beside it gets the other SMs. >= 0.
  int kernel_sms = 32;
  /// Channels (SMs) per NIC a communicator's traffic leaves a node through:
  /// NCCL_NCHANNELS_PER_NET_PEER's default 2 ("2 p2p channels per peer" on
  /// multi-node communicators; 2 x 8 NICs = "16 coll channels" on a
  /// 32-rank, 4-node one). >= 0.
  int net_channels_per_nic = 2;

  /// The NVLink hop NCCL's hwLat[NVLINK] rows assume: their LL entry, a bare
  /// hop (LL128 and Simple add their flags and fences on top of it).
  static constexpr double kNcclNvlinkHopS = 0.6e-6;

  /// Defaults for a cluster: nvls_efficiency 0.74 on Blackwell names, and
  /// the NVLink step latencies with the cluster's scale-up hop
  /// (ScaleUpSpec::latency_s) in place of NCCL's, so that a switched or
  /// mesh domain with slower hops pays for them (a torus prices its hops
  /// itself; the presets' 0.6 us is NCCL's own).
  static CollectiveParams for_cluster(const ClusterSpec& cluster);
};

/// One transfer of a phase: `multiplicity` identical flows (channels) from
/// src to dst, each moving `bytes`. src/dst are GPU ids, or kInNetwork (NVLS).
struct Transfer {
  int64_t src = 0;
  int64_t dst = 0;
  double bytes = 0;  ///< per flow, protocol overhead included
  uint32_t multiplicity = 1;
};

/// Transfers that run concurrently, after `latency_s` (the pipeline fill of
/// the phase: base + steps x step latency).
struct Phase {
  std::string name;
  std::vector<Transfer> transfers;
  double latency_s = 0;
};

/// A collective as phases of flows, for one algorithm and protocol.
struct CollectivePlan {
  CollectiveOp op = CollectiveOp::kAllReduce;
  Algorithm algorithm = Algorithm::kRing;
  Protocol protocol = Protocol::kSimple;
  int64_t ranks = 0;
  int64_t domains = 0;  ///< NVLink domains the group spans
  int channels = 1;     ///< parallel rings/trees (one per rail across domains)
  double bytes = 0;     ///< the op's size S (nccl-tests convention)
  std::vector<Phase> phases;
  /// Closed-form time: per phase latency + max over links of bytes/capacity.
  double estimate_s = 0;
  /// Engine flows (transfers, each with its multiplicity).
  size_t flow_count() const;
  /// Bytes all transfers of the plan move (sum of bytes x multiplicity).
  double total_bytes() const;
};

/// Plans `op` over `group` (global GPU ids, distinct). kAuto picks the
/// algorithm and protocol with the smallest estimate among those available;
/// `protocol` forces one. Throws std::invalid_argument for a bad group or an
/// algorithm the op/group/hardware cannot use (NVLS off one NVLink domain or
/// without GpuSpec::has_nvls, tree for anything but all-reduce, ...).
CollectivePlan plan_collective(const Fabric& fabric, CollectiveOp op,
                               std::span<const int64_t> group, double bytes,
                               Algorithm algorithm = Algorithm::kAuto,
                               const CollectiveParams& params = CollectiveParams{},
                               std::optional<Protocol> protocol = std::nullopt);

/// `calls` collectives of bytes / calls each, one after another, as one
/// plan (a framework that gathers or reduces parameter by parameter pays
/// every call's latency): the one-call plan with each phase's latency and
/// bytes times `calls`, so that its closed-form time is calls x the one
/// call's and the engine gets no more flows. calls >= 1.
CollectivePlan plan_back_to_back(const Fabric& fabric, CollectiveOp op,
                                 std::span<const int64_t> group, double bytes, int64_t calls,
                                 const CollectiveParams& params = CollectiveParams{});

/// The algorithms `op` can use on `group` here (kAuto excluded).
std::vector<Algorithm> available_algorithms(const Fabric& fabric, CollectiveOp op,
                                            std::span<const int64_t> group);

/// `route_hook`, when set, may rewrite each transfer's engine route before
/// its flow is added (the symmetric step simulation weighs every hop by the
/// number of symmetric images of the transfer that cross it).
using RouteHook = std::function<void(const Transfer&, Route&)>;
/// The first and last activities of a collective added to an engine.
struct ScheduledCollective {
  sim::ActivityId entry;  ///< what must wait for the collective's predecessors
  sim::ActivityId exit;   ///< finishes when the collective has
};
/// Adds the plan's flows to `engine`: per phase one flow per transfer
/// (latency = the phase latency), phases one after the other. A phase of one
/// transfer is that flow alone; a phase of several starts and ends with a
/// join; an empty plan is one join.
ScheduledCollective add_collective(sim::Engine& engine, const FabricInstance& fabric,
                                   const CollectivePlan& plan, uint32_t tag = 0,
                                   const RouteHook& route_hook = {});
/// The engine route of every transfer of `plan`, phases in order (with
/// `route_hook` applied), for the add_collective below: a plan that runs
/// many times in one simulation is routed once.
std::vector<Route> collective_routes(const FabricInstance& fabric, const CollectivePlan& plan,
                                     const RouteHook& route_hook = {});
/// add_collective with `routes` = collective_routes(fabric, plan, ...).
ScheduledCollective add_collective(sim::Engine& engine, const CollectivePlan& plan,
                                   std::span<const Route> routes, uint32_t tag = 0);
/// add_collective, started after `after`; returns the exit activity.
sim::ActivityId schedule_collective(sim::Engine& engine, const FabricInstance& fabric,
                                    const CollectivePlan& plan,
                                    std::span<const sim::ActivityId> after = {}, uint32_t tag = 0);
/// A collective simulated alone on a private engine.
struct CollectiveResult {
  CollectivePlan plan;  ///< what ran (algorithm, protocol, phases)
  /// Infinity when the collective would outlast the engine's clock (~106
  /// days: links far too slow for its bytes); algbw and busbw are then 0.
  double time_s = 0;
  double algbw_bytes_per_s = 0;  ///< bytes / time (0 when time is 0)
  double busbw_bytes_per_s = 0;  ///< algbw x bus_bandwidth_factor
  uint64_t events = 0;
};

/// SMs the NCCL kernel of a collective (or send/recv) among `group` holds
/// while it runs: params.kernel_sms inside one NVLink domain; across domains
/// net_channels_per_nic per NIC its traffic leaves a node through (one member
/// per domain: its own NIC; several: every NIC of the node), at most
/// kernel_sms.
int kernel_sms(const Fabric& fabric, const std::vector<int64_t>& group,
               const CollectiveParams& params);

CollectiveResult predict_collective(const Fabric& fabric, CollectiveOp op,
                                    std::span<const int64_t> group, double bytes,
                                    Algorithm algorithm = Algorithm::kAuto,
                                    const CollectiveParams& params = CollectiveParams{},
                                    std::optional<Protocol> protocol = std::nullopt);

/// NCCL-style double binary tree over m positions: [p][t] is the parent of
/// position p in tree t (-1 for a root). Tree 0 is the in-order tree whose
/// leaves are the even positions; tree 1 mirrors it (m even) or shifts it by
/// one (m odd) so most leaves of one tree are interior in the other.
std::vector<std::array<int64_t, 2>> double_binary_tree(int64_t m);

/// `op` over the first `gpus` GPUs of `cluster` for each size, with the
/// default CollectiveParams of its GPU: the core of `podsim collective`.
/// Builds the fabric once. Throws std::invalid_argument naming the bad input
/// (gpus outside 1..total, an invalid cluster, an unavailable algorithm).
std::vector<CollectiveResult> collective_sweep(const ClusterSpec& cluster, CollectiveOp op,
                                               int64_t gpus, std::span<const double> sizes,
                                               Algorithm algorithm = Algorithm::kAuto);

/// min, 2 min, 4 min, ... up to max inclusive (nccl-tests -b min -e max -f 2).
std::vector<double> doubling_sizes(double min_bytes, double max_bytes);

/// GPUs [first, first + count).
std::vector<int64_t> gpu_range(int64_t first, int64_t count);

}  // namespace podsim::hwmodels
