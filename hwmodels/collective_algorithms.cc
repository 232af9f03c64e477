// Each collective algorithm as a skeleton of phases: which GPU sends how many
// bytes to which in each phase, and the latency steps it takes.
#include "hwmodels/collective_algorithms.h"

#include <algorithm>
#include <array>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace podsim::hwmodels {
namespace collective_detail {

Layout analyse(const Fabric& fabric, std::span<const int64_t> group) {
  if (group.empty()) throw std::invalid_argument("collective: the group is empty");
  Layout l;
  l.given.assign(group.begin(), group.end());
  std::vector<int64_t> sorted = l.given;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i) {
    if (sorted[i] < 0 || sorted[i] >= fabric.gpu_count()) {
      throw std::invalid_argument("collective: GPU " + std::to_string(sorted[i]) +
                                  " is outside the cluster's 0.." +
                                  std::to_string(fabric.gpu_count() - 1));
    }
    if (i > 0 && sorted[i] == sorted[i - 1]) {
      throw std::invalid_argument("collective: GPU " + std::to_string(sorted[i]) +
                                  " appears twice in the group");
    }
  }
  std::map<int64_t, std::vector<int64_t>> by_domain;
  for (int64_t g : sorted) by_domain[fabric.domain_of(g)].push_back(g);
  for (auto& [d, members] : by_domain) l.domains.push_back(std::move(members));
  l.n = static_cast<int64_t>(sorted.size());
  l.min_k = l.max_k = l.domains.front().size();
  for (const auto& d : l.domains) {
    l.min_k = std::min(l.min_k, d.size());
    l.max_k = std::max(l.max_k, d.size());
  }
  return l;
}

namespace {

// One ring through all members. Across domains, channel c crosses every
// domain boundary on the same rail: even domains are walked forward from
// position c (leaving at c-1), odd ones backward from c-1 (leaving at c), so
// each hop leaves and enters at the same position, i.e. on the same NIC rail
// (NCCL's rail-aligned rings); with an even number of domains the ring also
// closes on that rail (an odd count leaves one hop that needs PXN). Inside
// one domain there is one ring: all channels share its links.
std::vector<int64_t> ring_order(const Layout& l, int channel) {
  std::vector<int64_t> order;
  order.reserve(static_cast<size_t>(l.n));
  for (size_t j = 0; j < l.domains.size(); ++j) {
    const auto& d = l.domains[j];
    const auto k = static_cast<int64_t>(d.size());
    const bool forward = j % 2 == 0;
    const int64_t start = (((channel - (forward ? 0 : 1)) % k) + k) % k;
    for (int64_t i = 0; i < k; ++i) {
      const int64_t pos = forward ? start + i : start - i + k;
      order.push_back(d[static_cast<size_t>(pos % k)]);
    }
  }
  return order;
}

Skeleton ring_skeleton(const Fabric& f, const Layout& l, CollectiveOp op, double S) {
  Skeleton sk;
  sk.algorithm = Algorithm::kRing;
  const double n = static_cast<double>(l.n);
  const double m = static_cast<double>(l.m());
  SkelPhase ph;
  ph.name = "ring";
  ph.cls = LatencyClass::kRing;
  ph.spans_domains = l.m() > 1;
  double per_edge = 0;
  switch (op) {
    case CollectiveOp::kAllReduce:
      per_edge = 2 * (n - 1) / n * S;
      ph.intra_steps = 2 * (n - m);  // nsteps - nInterSteps = 2(n-1) - 2(m-1)
      ph.inter_steps = 2 * (m - 1);
      break;
    case CollectiveOp::kAllGather:
    case CollectiveOp::kReduceScatter:
      per_edge = (n - 1) / n * S;
      ph.intra_steps = n - m;
      ph.inter_steps = m - 1;
      break;
    case CollectiveOp::kBroadcast:
      per_edge = S;  // a pipelined chain from the root
      ph.intra_steps = n - m;
      ph.inter_steps = m - 1;
      break;
    default:
      throw std::invalid_argument("ring: unsupported op");
  }
  const int channels = l.m() > 1 ? static_cast<int>(l.min_k) : 1;
  sk.channels = channels;
  const int64_t root = l.given.front();
  // On a mesh the ring hops inside a domain spread over all its links
  // (add_mesh_spread): summed per domain here, spread below.
  const bool mesh = f.topology() == ScaleUpTopology::kMesh;
  std::map<int64_t, double> inside;  // domain -> ring bytes between its members
  for (int c = 0; c < channels; ++c) {
    const std::vector<int64_t> order = ring_order(l, c);
    for (size_t i = 0; i < order.size(); ++i) {
      const int64_t dst = order[(i + 1) % order.size()];
      if (op == CollectiveOp::kBroadcast && dst == root) continue;
      if (mesh && dst != order[i] && f.domain_of(dst) == f.domain_of(order[i])) {
        inside[f.domain_of(dst)] += per_edge / channels;
        continue;
      }
      add(ph.bytes, order[i], dst, per_edge / channels);
    }
  }
  for (const auto& d : l.domains) {
    const auto it = inside.find(f.domain_of(d.front()));
    if (it != inside.end()) add_mesh_spread(d, it->second, ph.bytes);
  }
  sk.phases.push_back(std::move(ph));
  return sk;
}

// Parent of position p (0-based) in an in-order binary tree over 0..m-1
// (1-based node i has height ctz(i); leaves are the even positions), -1 for
// the root. Ancestors beyond m are skipped.
int64_t tree_parent(int64_t p, int64_t m) {
  auto parent_of = [](int64_t i) {
    const int64_t low = i & -i;
    return (i & (low << 1)) ? i - low : i + low;
  };
  int64_t root = 1;
  while (root * 2 <= m) root *= 2;
  int64_t i = p + 1;
  if (i == root) return -1;
  int64_t q = parent_of(i);
  while (q > m) q = parent_of(q);
  return q - 1;
}

Skeleton tree_skeleton(const Layout& l, double S) {
  Skeleton sk;
  sk.algorithm = Algorithm::kTree;
  SkelPhase ph;
  ph.name = "tree";
  ph.cls = LatencyClass::kTree;
  ph.spans_domains = l.m() > 1;
  const int64_t m = l.m();
  const int rails = m > 1 ? static_cast<int>(l.min_k) : 1;
  sk.channels = 2 * rails;
  // Two trees, `rails` channels each: D bytes per (tree, rail) go up (reduce)
  // and come back down (broadcast) every edge, pipelined.
  const double D = S / (2.0 * rails);
  for (int r = 0; r < rails; ++r) {
    for (const auto& d : l.domains) {  // chain inside the domain, head = member r
      const auto k = static_cast<int64_t>(d.size());
      for (int64_t i = 0; i + 1 < k; ++i) {
        const int64_t a = d[static_cast<size_t>((r + i) % k)];
        const int64_t b = d[static_cast<size_t>((r + i + 1) % k)];
        add(ph.bytes, b, a, D, 2);  // both trees share the chain
        add(ph.bytes, a, b, D, 2);
      }
    }
  }
  if (m > 1) {
    const auto parents = double_binary_tree(m);
    for (int t = 0; t < 2; ++t) {
      for (int64_t u = 0; u < m; ++u) {
        const int64_t v = parents[static_cast<size_t>(u)][static_cast<size_t>(t)];
        if (v < 0) continue;
        for (int r = 0; r < rails; ++r) {
          const int64_t a = l.domains[static_cast<size_t>(u)][static_cast<size_t>(r)];
          const int64_t b = l.domains[static_cast<size_t>(v)][static_cast<size_t>(r)];
          add(ph.bytes, a, b, D);
          add(ph.bytes, b, a, D);
        }
      }
    }
  }
  // NCCL: 2 x ((ppn - 1) intra + log2(nNodes) inter).
  ph.intra_steps = 2.0 * static_cast<double>(l.max_k - 1);
  ph.inter_steps = m > 1 ? 2.0 * std::floor(std::log2(static_cast<double>(m))) : 0.0;
  sk.phases.push_back(std::move(ph));
  return sk;
}

// In each domain a reduce-scatter or all-gather over its members, across
// domains one ring per member position (rail); the order of the phases
// follows the op (all-reduce: reduce-scatter, all-reduce across, all-gather;
// all-gather: across first; reduce-scatter: across last). NCCL runs it for
// all-reduce; XLA for all three across TPU slices ("Reduce Scatter grads on
// fast network, All Reduce across slow, All Gather on faster network",
// MaxText sharding guide [N08] in docs/hardware.md), each in-slice phase as
// its torus collective.
Skeleton hierarchical_skeleton(const Fabric& f, const Layout& l, CollectiveOp op, double S,
                               const CollectiveParams& params) {
  Skeleton sk;
  sk.algorithm = Algorithm::kHierarchical;
  const auto k = static_cast<int64_t>(l.min_k);
  const int64_t m = l.m();
  sk.channels = static_cast<int>(k);
  const double kd = static_cast<double>(k);
  const double md = static_cast<double>(m);
  const bool torus = f.topology() == ScaleUpTopology::kTorus;
  sk.simple_only = torus;
  auto intra = [&](const char* name, CollectiveOp intra_op) {
    SkelPhase ph;
    ph.name = name;
    ph.cls = LatencyClass::kRing;
    ph.intra_steps = kd - 1;
    for (const auto& d : l.domains) {
      if (torus) {
        ph.own_latency_s =
            std::max(ph.own_latency_s, add_torus_collective(f, d, intra_op, S, params, ph.bytes));
        ph.protocol_scales_bytes = false;
      } else if (f.topology() == ScaleUpTopology::kMesh) {
        add_mesh_spread(d, (kd - 1) * S, ph.bytes);  // (k - 1)/k S from each member
      } else {
        for (int64_t i = 0; i < k; ++i) {
          add(ph.bytes, d[static_cast<size_t>(i)], d[static_cast<size_t>((i + 1) % k)],
              (kd - 1) / kd * S);
        }
      }
    }
    return ph;
  };
  auto across = [&](const char* name, double rounds) {
    SkelPhase ph;
    ph.name = name;
    ph.cls = LatencyClass::kRing;
    ph.spans_domains = true;
    ph.inter_steps = rounds * (md - 1);
    for (int64_t r = 0; r < k; ++r) {
      for (int64_t j = 0; j < m; ++j) {
        add(ph.bytes, l.domains[static_cast<size_t>(j)][static_cast<size_t>(r)],
            l.domains[static_cast<size_t>((j + 1) % m)][static_cast<size_t>(r)],
            rounds * (md - 1) / md * S / kd);
      }
    }
    return ph;
  };
  switch (op) {
    case CollectiveOp::kAllReduce:
      sk.phases.push_back(intra("intra reduce-scatter", CollectiveOp::kReduceScatter));
      sk.phases.push_back(across("inter all-reduce", 2));
      sk.phases.push_back(intra("intra all-gather", CollectiveOp::kAllGather));
      break;
    case CollectiveOp::kAllGather:
      sk.phases.push_back(across("inter all-gather", 1));
      sk.phases.push_back(intra("intra all-gather", CollectiveOp::kAllGather));
      break;
    case CollectiveOp::kReduceScatter:
      sk.phases.push_back(intra("intra reduce-scatter", CollectiveOp::kReduceScatter));
      sk.phases.push_back(across("inter reduce-scatter", 1));
      break;
    default:
      throw std::invalid_argument("hierarchical: unsupported op");
  }
  return sk;
}

// XLA's collective over a group inside one torus slice.
Skeleton torus_skeleton(const Fabric& f, const Layout& l, CollectiveOp op, double S,
                        const CollectiveParams& params) {
  Skeleton sk;
  sk.algorithm = Algorithm::kTorus;
  sk.simple_only = true;
  SkelPhase ph;
  ph.name = "torus";
  ph.protocol_scales_bytes = false;
  ph.own_latency_s = add_torus_collective(f, l.given, op, S, params, ph.bytes);
  sk.phases.push_back(std::move(ph));
  return sk;
}

Skeleton nvls_skeleton(const Layout& l, CollectiveOp op, double S, const CollectiveParams& params) {
  Skeleton sk;
  sk.algorithm = Algorithm::kNvls;
  sk.simple_only = true;
  SkelPhase ph;
  ph.name = "nvls";
  ph.cls = LatencyClass::kNvls;
  ph.intra_steps = 1;  // NCCL: lat = base + intraLat
  ph.protocol_scales_bytes = false;
  const double n = static_cast<double>(l.n);
  // Per GPU port: all-reduce = multimem.ld_reduce (send S, receive S/n) then
  // multimem.st of the reduced S/n (send S/n, receive S by multicast).
  double up = 0;
  double down = 0;
  switch (op) {
    case CollectiveOp::kAllReduce:
      up = down = S * (n + 1) / n;
      break;
    case CollectiveOp::kAllGather:
      up = S / n;
      down = S;
      break;
    case CollectiveOp::kReduceScatter:
      up = S;
      down = S / n;
      break;
    default:
      throw std::invalid_argument("nvls: unsupported op");
  }
  for (int64_t g : l.domains.front()) {
    add(ph.bytes, g, kInNetwork, up / params.nvls_efficiency);
    add(ph.bytes, kInNetwork, g, down / params.nvls_efficiency);
  }
  sk.phases.push_back(std::move(ph));
  return sk;
}

Skeleton direct_skeleton(const Layout& l, CollectiveOp op, double S,
                         const CollectiveParams& params) {
  Skeleton sk;
  sk.algorithm = Algorithm::kDirect;
  SkelPhase ph;
  ph.cls = LatencyClass::kRing;
  ph.spans_domains = l.m() > 1;
  (ph.spans_domains ? ph.inter_steps : ph.intra_steps) = 1;
  const std::vector<int64_t>& g = l.given;
  if (op == CollectiveOp::kAllToAll) {
    ph.name = "all-to-all";
    if (l.n > params.max_all_to_all_ranks) {
      throw std::invalid_argument("all_to_all over " + std::to_string(l.n) + " GPUs would need " +
                                  std::to_string(l.n * (l.n - 1)) + " flows; the limit is " +
                                  std::to_string(params.max_all_to_all_ranks) +
                                  " GPUs (CollectiveParams)");
    }
    const double share = S / static_cast<double>(l.n);
    for (int64_t a : g) {
      for (int64_t b : g) add(ph.bytes, a, b, share);
    }
  } else {
    ph.name = "send/recv";
    for (size_t i = 0; i < g.size(); ++i) add(ph.bytes, g[i], g[(i + 1) % g.size()], S);
  }
  sk.phases.push_back(std::move(ph));
  return sk;
}

bool can_nvls(const Fabric& f, const Layout& l, CollectiveOp op) {
  return f.spec().gpu.has_nvls && f.topology() == ScaleUpTopology::kSwitch && l.m() == 1 &&
         l.n > 1 && f.domain_size() > 1 &&
         (op == CollectiveOp::kAllReduce || op == CollectiveOp::kAllGather ||
          op == CollectiveOp::kReduceScatter);
}

}  // namespace

void add_mesh_spread(std::span<const int64_t> members, double total, TransferMap& bytes) {
  const auto k = static_cast<double>(members.size());
  if (members.size() < 2 || !(total > 0)) return;
  const double each = total / (k * (k - 1));
  for (const int64_t a : members) {
    for (const int64_t b : members) add(bytes, a, b, each);
  }
}

std::vector<Algorithm> available(const Fabric& f, const Layout& l, CollectiveOp op) {
  const bool reduction_or_gather = op == CollectiveOp::kAllReduce ||
                                   op == CollectiveOp::kAllGather ||
                                   op == CollectiveOp::kReduceScatter;
  const bool layered = l.m() > 1 && l.uniform() && l.min_k > 1;
  if (f.topology() == ScaleUpTopology::kTorus && reduction_or_gather) {
    // XLA: per-axis rings inside a slice, hierarchical across slices; a ring
    // over one chip per slice, or slices holding different numbers.
    if (l.m() == 1) return {Algorithm::kTorus};
    if (layered) return {Algorithm::kHierarchical};
    return {Algorithm::kRing};
  }
  std::vector<Algorithm> out;
  switch (op) {
    case CollectiveOp::kAllReduce:
      out = {Algorithm::kRing};
      // RCCL skips Tree inside one node on gfx94 (tuning.cc, [N13] in
      // docs/hardware.md): on a mesh a tree's chains use one link each.
      if (f.topology() != ScaleUpTopology::kMesh || l.m() > 1) out.push_back(Algorithm::kTree);
      if (layered) out.push_back(Algorithm::kHierarchical);
      break;
    case CollectiveOp::kAllGather:
    case CollectiveOp::kReduceScatter:
    case CollectiveOp::kBroadcast:
      out = {Algorithm::kRing};
      break;
    case CollectiveOp::kAllToAll:
    case CollectiveOp::kSendRecv:
      out = {Algorithm::kDirect};
      break;
  }
  if (can_nvls(f, l, op)) out.push_back(Algorithm::kNvls);
  return out;
}

std::string why_not(const Fabric& f, const Layout& l, CollectiveOp op, Algorithm a) {
  if (a == Algorithm::kNvls) {
    if (!f.spec().gpu.has_nvls) return f.spec().gpu.name + " has no NVLink SHARP (has_nvls)";
    if (f.topology() != ScaleUpTopology::kSwitch) return "the scale-up domain has no NVSwitch";
    if (l.m() > 1) return "the group spans " + std::to_string(l.m()) + " NVLink domains";
  }
  if (a == Algorithm::kTorus) {
    if (f.topology() != ScaleUpTopology::kTorus) return "the scale-up domain is not a torus";
    if (l.m() > 1) return "the group spans " + std::to_string(l.m()) + " slices";
  }
  if (f.topology() == ScaleUpTopology::kTorus) {
    return "XLA runs " + std::string(to_string(op)) +
           " as torus rings inside a slice and hierarchically across slices";
  }
  if (a == Algorithm::kTree && f.topology() == ScaleUpTopology::kMesh) {
    return "RCCL runs no tree inside one mesh node";
  }
  if (a == Algorithm::kHierarchical) {
    return "needs several NVLink domains with the same number (> 1) of group members each";
  }
  return std::string(to_string(a)) + " does not implement " + std::string(to_string(op));
}

Skeleton build(const Fabric& f, const Layout& l, CollectiveOp op, double S, Algorithm a,
               const CollectiveParams& params) {
  switch (a) {
    case Algorithm::kRing:
      return ring_skeleton(f, l, op, S);
    case Algorithm::kTree:
      return tree_skeleton(l, S);
    case Algorithm::kHierarchical:
      return hierarchical_skeleton(f, l, op, S, params);
    case Algorithm::kNvls:
      return nvls_skeleton(l, op, S, params);
    case Algorithm::kDirect:
      return direct_skeleton(l, op, S, params);
    case Algorithm::kTorus:
      return torus_skeleton(f, l, op, S, params);
    case Algorithm::kAuto:
      break;
  }
  throw std::logic_error("collective: no skeleton for auto");
}

}  // namespace collective_detail

using collective_detail::tree_parent;

std::vector<std::array<int64_t, 2>> double_binary_tree(int64_t m) {
  // Tree 0: in-order tree. Tree 1: mirrored (m even) or shifted by one (m
  // odd), so that the leaves of one are interior nodes of the other (NCCL).
  std::vector<std::array<int64_t, 2>> parents(static_cast<size_t>(m));
  for (int64_t p = 0; p < m; ++p) parents[static_cast<size_t>(p)][0] = tree_parent(p, m);
  for (int64_t p = 0; p < m; ++p) {
    // Position of domain p in tree 1, and back.
    const int64_t pos = (m % 2 == 0) ? m - 1 - p : (p + m - 1) % m;
    const int64_t parent_pos = tree_parent(pos, m);
    int64_t parent = -1;
    if (parent_pos >= 0) parent = (m % 2 == 0) ? m - 1 - parent_pos : (parent_pos + 1) % m;
    parents[static_cast<size_t>(p)][1] = parent;
  }
  return parents;
}

}  // namespace podsim::hwmodels
