// Collectives on a TPU slice as XLA runs them over the ICI torus: a
// reduce-scatter, all-gather or all-reduce over a group that is a box of the
// grid (a set of positions on each axis, every combination present) runs as
// bidirectional rings along each of the box's axes, half the data each way
// round [S24 "How to think about TPUs" / sharding: "AllGather ... over
// multiple axes", T = V / (W_bidi x n_axes)]. The data is cut into one part
// per axis; part p starts on axis p and then takes the others in turn, so
// every axis's links are busy at once (the bandwidth-optimal schedule the
// scaling-book formula describes; whether XLA runs the parts concurrently or
// one axis after the other is not published: docs/hardware.md).
//
// Rings along an axis that is the slice's whole wrapped axis close with one
// hop; on a line (no wrap-around, or only some positions of the axis) the
// closing transfer runs back along the line, so each direction's links carry
// both rings' data: twice the time, as the scaling-book says of v5e/v6e
// slices without wrap-around ("It typically doubles the time").
//
// A group need not be a whole box: the axes along which it is a product (each
// member's copies at every position the group has on that axis are members
// too; the 6,144-chip v5p slice's FSDP groups of 48 are the two halves of x
// times 24 chips folded over y and z) get their rings as above, and what is
// left, the members at the first position of those axes, is one more ring in
// chip order, routed dimension by dimension. A box is the case where nothing
// is left; a group with no such axis is one ring.
//
// Every line along a separable axis, and every copy of the leftover ring,
// carries the same traffic on links of its own, so only the ones through the
// group's first member are built (the torus' own symmetry, as the step
// simulation's images are the plan's): the collective's time is theirs, and
// its flows stay a few per position instead of one per chip and link.
#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>
#include <utility>
#include <vector>

#include "hwmodels/collective_algorithms.h"

namespace podsim::hwmodels::collective_detail {
namespace {

// The group as rings: one per separable axis (the line through the first
// member along it) and one over what is left.
struct Rings {
  std::vector<std::vector<int64_t>> rings;  // chips in ring order
  std::vector<int> axis;                    // the torus axis of each ring; -1: the leftover
};

Rings rings_of(const TorusGrid& grid, int64_t base, std::span<const int64_t> members) {
  std::set<std::array<int, 3>> at;
  for (const int64_t g : members) at.insert(grid.coords(g - base));
  // The axes along which the group is a product, with their positions.
  std::vector<std::pair<int, std::set<int>>> separable;
  for (int a = 0; a < grid.dims(); ++a) {
    const auto ax = static_cast<size_t>(a);
    std::set<int> positions;
    for (const std::array<int, 3>& c : at) positions.insert(c[ax]);
    if (positions.size() < 2) continue;
    const bool product = std::all_of(at.begin(), at.end(), [&](const std::array<int, 3>& c) {
      return std::all_of(positions.begin(), positions.end(), [&](int p) {
        std::array<int, 3> copy = c;
        copy[ax] = p;
        return at.contains(copy);
      });
    });
    if (product) separable.emplace_back(a, std::move(positions));
  }
  // A member at the first position of every separable axis: the origin of
  // the lines and of the leftover ring.
  std::array<int, 3> origin = *at.begin();
  for (const auto& [a, positions] : separable) origin[static_cast<size_t>(a)] = *positions.begin();
  Rings out;
  for (const auto& [a, positions] : separable) {
    std::vector<int64_t> line;
    std::array<int, 3> c = origin;
    for (const int p : positions) {
      c[static_cast<size_t>(a)] = p;
      line.push_back(base + grid.chip(c));
    }
    out.rings.push_back(std::move(line));
    out.axis.push_back(a);
  }
  std::vector<int64_t> left;
  for (const std::array<int, 3>& c : at) {
    const bool at_origin = std::all_of(separable.begin(), separable.end(), [&](const auto& s) {
      return c[static_cast<size_t>(s.first)] == origin[static_cast<size_t>(s.first)];
    });
    if (at_origin) left.push_back(base + grid.chip(c));
  }
  if (left.size() > 1) {
    std::sort(left.begin(), left.end());
    out.rings.push_back(std::move(left));
    out.axis.push_back(-1);
  }
  return out;
}

// Bytes each ring step moves per edge and direction, over the data D of the
// part entering that step: (n - 1)/n x D, half each way round.
double half_ring_edge(double n, double data) { return (n - 1) / n * data / 2; }

using Loads = std::map<std::pair<int64_t, int64_t>, double>;

// Both rings through `chips` (in ring order), `edge` bytes on each edge.
void add_bidirectional_ring(const std::vector<int64_t>& chips, double edge, Loads& load) {
  const size_t n = chips.size();
  for (size_t i = 0; i < n; ++i) {
    const int64_t a = chips[i];
    const int64_t b = chips[(i + 1) % n];
    load[{a, b}] += edge;
    load[{b, a}] += edge;
  }
}

}  // namespace

double add_torus_collective(const Fabric& f, std::span<const int64_t> members, CollectiveOp op,
                            double S, const CollectiveParams& params, TransferMap& bytes) {
  if (op != CollectiveOp::kAllReduce && op != CollectiveOp::kAllGather &&
      op != CollectiveOp::kReduceScatter) {
    throw std::invalid_argument("torus: only all-reduce, all-gather and reduce-scatter");
  }
  const TorusGrid& grid = f.torus();
  const double hop_s = f.spec().scale_up.latency_s;
  const int64_t base = members.front() / f.domain_size() * f.domain_size();
  // All-reduce = reduce-scatter + all-gather over the same rings: twice the
  // bytes and the steps.
  const double passes = op == CollectiveOp::kAllReduce ? 2.0 : 1.0;
  const Rings r = rings_of(grid, base, members);
  const auto k = static_cast<int>(r.rings.size());
  Loads load;
  for (int p = 0; p < k; ++p) {
    double data = S / k;
    for (int j = 0; j < k; ++j) {
      const auto i = static_cast<size_t>((p + j) % k);
      const auto n = static_cast<double>(r.rings[i].size());
      add_bidirectional_ring(r.rings[i], passes * half_ring_edge(n, data), load);
      data /= n;
    }
  }
  // Latency: one part's steps, ring after ring. A ring round a whole wrapped
  // axis needs ceil(n/2) steps each way; any other ring n - 1; a step is as
  // many hops as its farthest neighbours are apart.
  double hops = 0;
  for (size_t i = 0; i < r.rings.size(); ++i) {
    const std::vector<int64_t>& ring = r.rings[i];
    const auto n = static_cast<int>(ring.size());
    int longest = 1;
    for (size_t q = 0; q + 1 < ring.size(); ++q) {
      longest = std::max(longest, grid.hops(ring[q] - base, ring[q + 1] - base));
    }
    const int a = r.axis[i];
    const bool closed =
        a >= 0 && grid.wraps[static_cast<size_t>(a)] && n == grid.shape[static_cast<size_t>(a)];
    hops += passes * (closed ? (n + 1) / 2 : n - 1) * longest;
  }
  // One flow per chip pair: the parts' traffic between the same two chips
  // takes the same route, so it is summed into one transfer.
  for (const auto& [ends, b] : load) add(bytes, ends.first, ends.second, b);
  return params.ici_base_latency_s + hops * hop_s;
}

}  // namespace podsim::hwmodels::collective_detail
