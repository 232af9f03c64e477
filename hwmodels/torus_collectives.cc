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
// Every line of a box along one axis carries the same traffic on links of
// its own, so only the lines through the box's first member are built (the
// torus' own symmetry, as the step simulation's images are the plan's): the
// collective's time is theirs, and its flows stay a few per axis position
// instead of one per chip and link. A group that is not a box runs one
// bidirectional ring in chip order, routed dimension by dimension.
#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

#include "hwmodels/collective_algorithms.h"

namespace podsim::hwmodels::collective_detail {
namespace {

struct Box {
  std::array<std::vector<int>, 3> positions;  // sorted, per axis
  std::array<int, 3> origin{0, 0, 0};         // the first member's coordinates
};

std::optional<Box> box_of(const TorusGrid& grid, int64_t base, std::span<const int64_t> members) {
  Box box;
  for (const int64_t g : members) {
    const std::array<int, 3> c = grid.coords(g - base);
    for (int a = 0; a < grid.dims(); ++a) box.positions[static_cast<size_t>(a)].push_back(c[a]);
  }
  int64_t product = 1;
  for (int a = 0; a < grid.dims(); ++a) {
    auto& p = box.positions[static_cast<size_t>(a)];
    std::sort(p.begin(), p.end());
    p.erase(std::unique(p.begin(), p.end()), p.end());
    product *= static_cast<int64_t>(p.size());
    box.origin[static_cast<size_t>(a)] = p.front();
  }
  // Members are distinct and each lies in the product of the positions, so
  // as many members as combinations means every combination is a member.
  if (product != static_cast<int64_t>(members.size())) return std::nullopt;
  return box;
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
  Loads load;
  double hops = 0;
  if (const std::optional<Box> box = box_of(grid, base, members)) {
    std::vector<int> axes;  // the box's axes with more than one position
    for (int a = 0; a < grid.dims(); ++a) {
      if (box->positions[static_cast<size_t>(a)].size() > 1) axes.push_back(a);
    }
    const auto k = static_cast<int>(axes.size());
    // The line through the origin along each axis, in ring order.
    std::vector<std::vector<int64_t>> lines;
    for (const int a : axes) {
      std::vector<int64_t> line;
      std::array<int, 3> c = box->origin;
      for (const int pos : box->positions[static_cast<size_t>(a)]) {
        c[static_cast<size_t>(a)] = pos;
        line.push_back(base + grid.chip(c));
      }
      lines.push_back(std::move(line));
    }
    for (int p = 0; p < k; ++p) {
      double data = S / k;
      for (int j = 0; j < k; ++j) {
        const auto i = static_cast<size_t>((p + j) % k);
        const auto n = static_cast<double>(lines[i].size());
        add_bidirectional_ring(lines[i], passes * half_ring_edge(n, data), load);
        data /= n;
      }
    }
    // Latency: one part's steps, axis after axis. A ring round a whole
    // wrapped axis needs ceil(n/2) steps each way; on a line, n - 1; a step
    // is as many hops as the positions are apart.
    for (size_t i = 0; i < axes.size(); ++i) {
      const auto a = static_cast<size_t>(axes[i]);
      const std::vector<int>& pos = box->positions[a];
      const auto n = static_cast<int>(pos.size());
      int stride = 1;
      for (size_t q = 1; q < pos.size(); ++q) stride = std::max(stride, pos[q] - pos[q - 1]);
      const bool closed = grid.wraps[a] && n == grid.shape[a];
      hops += passes * (closed ? (n + 1) / 2 : n - 1) * stride;
    }
  } else {
    std::vector<int64_t> ring(members.begin(), members.end());
    std::sort(ring.begin(), ring.end());
    const auto n = static_cast<double>(ring.size());
    add_bidirectional_ring(ring, passes * half_ring_edge(n, S), load);
    int longest = 1;
    for (size_t i = 0; i < ring.size(); ++i) {
      longest = std::max(longest, grid.hops(ring[i] - base, ring[(i + 1) % ring.size()] - base));
    }
    hops = passes * (n - 1) * longest;
  }
  // One flow per chip pair: the parts' traffic between the same two chips
  // takes the same route, so it is summed into one transfer.
  for (const auto& [ends, b] : load) add(bytes, ends.first, ends.second, b);
  return params.ici_base_latency_s + hops * hop_s;
}

}  // namespace podsim::hwmodels::collective_detail
