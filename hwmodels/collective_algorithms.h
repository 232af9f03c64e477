#pragma once

// Inside the collective model (internal to hwmodels/): a group split by
// NVLink domain, and each algorithm's skeleton -- its phases of transfers
// with payload bytes and step counts, before a protocol prices them
// (collective_algorithms.cc: ring, tree, hierarchical, NVLS, direct, torus). New
// algorithms and topologies add a skeleton here; collectives.cc measures,
// prices and realises them.

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "hwmodels/collectives.h"
#include "hwmodels/fabric.h"

namespace podsim::hwmodels::collective_detail {

// (src, dst, bytes per flow) -> number of identical flows. Channels whose
// paths and sizes coincide become one engine flow with that multiplicity on
// every hop: the same max-min rates as separate flows, at the cost of one.
// (Summing them into one bigger flow would not be the same: max-min shares
// per flow, not per byte.) Ordered map: deterministic flow order.
using Key = std::tuple<int64_t, int64_t, double>;
using TransferMap = std::map<Key, uint32_t>;

// The group, split by NVLink domain: domains in id order, members by GPU id.
struct Layout {
  std::vector<int64_t> given;  // the group as given (root, send/recv order)
  std::vector<std::vector<int64_t>> domains;
  int64_t n = 0;
  size_t min_k = 0;
  size_t max_k = 0;
  bool uniform() const { return min_k == max_k; }
  int64_t m() const { return static_cast<int64_t>(domains.size()); }
};

/// The group as given, its domains and sizes; throws std::invalid_argument
/// for an empty group, a GPU outside the fabric or a GPU twice.
Layout analyse(const Fabric& fabric, std::span<const int64_t> group);

// A phase before a protocol is chosen: payload bytes and step counts.
struct SkelPhase {
  std::string name;
  TransferMap bytes;
  LatencyClass cls = LatencyClass::kRing;
  double intra_steps = 0;
  double inter_steps = 0;
  bool spans_domains = false;
  bool protocol_scales_bytes = true;  // false for NVLS (its own efficiency) and XLA
  double own_latency_s = -1;          // >= 0: the phase's latency, no NCCL table (XLA)
  // Filled by measure():
  double max_link_time_s = 0;  // busiest link: bytes / capacity
  double inter_latency_s = 0;  // largest fabric path latency across domains
};

struct Skeleton {
  Algorithm algorithm = Algorithm::kRing;
  int channels = 1;
  std::vector<SkelPhase> phases;
  bool simple_only = false;  // NVLS and XLA run one protocol (Simple: no byte inflation)
};

inline void add(TransferMap& m, int64_t src, int64_t dst, double bytes, uint32_t count = 1) {
  if (src == dst) return;
  m[Key{src, dst, bytes}] += count;
}

/// Adds to `bytes` the flows of an all-reduce, all-gather or reduce-scatter
/// (`op`, S as in nccl-tests) among `members`, GPUs of one torus slice, as
/// XLA runs it (torus_collectives.cc), and returns its latency: the
/// ici_base_latency_s plus ScaleUpSpec::latency_s per hop of the longest
/// chain of steps.
double add_torus_collective(const Fabric& f, std::span<const int64_t> members, CollectiveOp op,
                            double S, const CollectiveParams& params, TransferMap& bytes);

/// Ring traffic inside one mesh domain (`members`, all of it): RCCL's rings
/// on a fully connected node (rome_model_79: 14 Hamiltonian orders that put
/// the same number of rings on every directed link) carry it evenly over
/// every directed link of the group, `total` bytes in all.
void add_mesh_spread(std::span<const int64_t> members, double total, TransferMap& bytes);

/// The algorithms `op` can use on this group and fabric (kAuto excluded).
std::vector<Algorithm> available(const Fabric& f, const Layout& l, CollectiveOp op);
/// Why algorithm `a` cannot run `op` on this group, in words.
std::string why_not(const Fabric& f, const Layout& l, CollectiveOp op, Algorithm a);
/// The skeleton of `op` over `S` bytes with algorithm `a` (not kAuto).
Skeleton build(const Fabric& f, const Layout& l, CollectiveOp op, double S, Algorithm a,
               const CollectiveParams& params);

}  // namespace podsim::hwmodels::collective_detail
