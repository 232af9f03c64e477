#include "hwmodels/collectives.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

// How collectives become flows.
//
// A pipelined collective moves its data in many small chunks: the first chunk
// crosses every step of the pipeline (its latency), and after that the links
// stream continuously, each carrying its total bytes at its share of the
// bandwidth. The time is therefore latency + bytes/bandwidth of the busiest
// link, which is what one fluid flow per link-pair with the whole phase
// latency in front gives. For a ring all-reduce: n concurrent neighbour flows
// of 2(n-1)/n x S bytes after 2(n-1) step latencies, i.e. NCCL's own model
// lat + S/algbw (tuning.cc), but with the bandwidth coming from the fabric so
// that concurrent traffic contends.

namespace podsim::hwmodels {
namespace {

// (src, dst, bytes per flow) -> number of identical flows. Channels whose
// paths and sizes coincide become one engine flow with that multiplicity on
// every hop: the same max-min rates as separate flows, at the cost of one.
// (Summing them into one bigger flow would not be the same: max-min shares
// per flow, not per byte.) Ordered map: deterministic flow order.
using Key = std::tuple<int64_t, int64_t, double>;
using TransferMap = std::map<Key, uint32_t>;

constexpr int kSimple = static_cast<int>(Protocol::kSimple);

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

// A phase before a protocol is chosen: payload bytes and step counts.
struct SkelPhase {
  std::string name;
  TransferMap bytes;
  LatencyClass cls = LatencyClass::kRing;
  double intra_steps = 0;
  double inter_steps = 0;
  bool spans_domains = false;
  bool protocol_scales_bytes = true;  // false for NVLS (its own efficiency)
  // Filled by measure():
  double max_link_time_s = 0;  // busiest link: bytes / capacity
  double inter_latency_s = 0;  // largest fabric path latency across domains
};

struct Skeleton {
  Algorithm algorithm = Algorithm::kRing;
  int channels = 1;
  std::vector<SkelPhase> phases;
  bool simple_only = false;  // NVLS runs the Simple protocol only
};

void add(TransferMap& m, int64_t src, int64_t dst, double bytes, uint32_t count = 1) {
  if (src == dst) return;
  m[Key{src, dst, bytes}] += count;
}

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

Skeleton ring_skeleton(const Layout& l, CollectiveOp op, double S) {
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
  for (int c = 0; c < channels; ++c) {
    const std::vector<int64_t> order = ring_order(l, c);
    for (size_t i = 0; i < order.size(); ++i) {
      const int64_t dst = order[(i + 1) % order.size()];
      if (op == CollectiveOp::kBroadcast && dst == root) continue;
      add(ph.bytes, order[i], dst, per_edge / channels);
    }
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

}  // namespace

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

namespace {

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

Skeleton hierarchical_skeleton(const Layout& l, double S) {
  Skeleton sk;
  sk.algorithm = Algorithm::kHierarchical;
  const auto k = static_cast<int64_t>(l.min_k);
  const int64_t m = l.m();
  sk.channels = static_cast<int>(k);
  const double kd = static_cast<double>(k);
  const double md = static_cast<double>(m);
  auto intra = [&](const char* name) {
    SkelPhase ph;
    ph.name = name;
    ph.cls = LatencyClass::kRing;
    ph.intra_steps = kd - 1;
    for (const auto& d : l.domains) {
      for (int64_t i = 0; i < k; ++i) {
        add(ph.bytes, d[static_cast<size_t>(i)], d[static_cast<size_t>((i + 1) % k)],
            (kd - 1) / kd * S);
      }
    }
    return ph;
  };
  sk.phases.push_back(intra("intra reduce-scatter"));
  SkelPhase across;
  across.name = "inter all-reduce";
  across.cls = LatencyClass::kRing;
  across.spans_domains = true;
  across.inter_steps = 2 * (md - 1);
  for (int64_t r = 0; r < k; ++r) {
    for (int64_t j = 0; j < m; ++j) {
      add(across.bytes, l.domains[static_cast<size_t>(j)][static_cast<size_t>(r)],
          l.domains[static_cast<size_t>((j + 1) % m)][static_cast<size_t>(r)],
          2 * (md - 1) / md * S / kd);
    }
  }
  sk.phases.push_back(std::move(across));
  sk.phases.push_back(intra("intra all-gather"));
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
  return f.spec().gpu.has_nvls && l.m() == 1 && l.n > 1 && f.domain_size() > 1 &&
         (op == CollectiveOp::kAllReduce || op == CollectiveOp::kAllGather ||
          op == CollectiveOp::kReduceScatter);
}

std::vector<Algorithm> available(const Fabric& f, const Layout& l, CollectiveOp op) {
  std::vector<Algorithm> out;
  switch (op) {
    case CollectiveOp::kAllReduce:
      out = {Algorithm::kRing, Algorithm::kTree};
      if (l.m() > 1 && l.uniform() && l.min_k > 1) out.push_back(Algorithm::kHierarchical);
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
    if (l.m() > 1) return "the group spans " + std::to_string(l.m()) + " NVLink domains";
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
      return ring_skeleton(l, op, S);
    case Algorithm::kTree:
      return tree_skeleton(l, S);
    case Algorithm::kHierarchical:
      return hierarchical_skeleton(l, S);
    case Algorithm::kNvls:
      return nvls_skeleton(l, op, S, params);
    case Algorithm::kDirect:
      return direct_skeleton(l, op, S, params);
    case Algorithm::kAuto:
      break;
  }
  (void)f;
  throw std::logic_error("collective: no skeleton for auto");
}

// Busiest link time and the cross-domain path latency of each phase.
void measure(const Fabric& f, Skeleton& sk) {
  std::vector<double> load(f.link_count(), 0.0);
  std::vector<uint32_t> touched;
  for (SkelPhase& ph : sk.phases) {
    touched.clear();
    ph.max_link_time_s = 0;
    ph.inter_latency_s = 0;
    for (const auto& [key, count] : ph.bytes) {
      const auto& [src, dst, bytes] = key;
      const FabricPath p = f.path(src, dst);
      for (uint32_t l : p.links) {
        if (load[l] == 0.0) touched.push_back(l);
        load[l] += bytes * count;
      }
      if (src != kInNetwork && dst != kInNetwork && f.domain_of(src) != f.domain_of(dst)) {
        ph.inter_latency_s = std::max(ph.inter_latency_s, p.latency_s);
      }
    }
    for (uint32_t l : touched) {
      ph.max_link_time_s = std::max(ph.max_link_time_s, load[l] / f.link(l).capacity_bytes_per_s);
      load[l] = 0.0;
    }
  }
}

double phase_latency(const SkelPhase& ph, Protocol proto, const CollectiveParams& p) {
  const auto c = static_cast<size_t>(ph.cls);
  const auto k = static_cast<size_t>(proto);
  double intra = p.nvlink_step_latency_s[c][k];
  if (ph.spans_domains) {
    const double overhead =
        p.net_overhead_s *
        (static_cast<int>(proto) == kSimple ? p.net_overhead_simple_factor : 1.0);
    intra = std::max(intra, overhead);
  }
  const double inter = p.net_step_latency_s[c][k] +
                       ph.inter_latency_s * (static_cast<int>(proto) == kSimple ? 2.0 : 1.0);
  return p.base_latency_s[c][k] + ph.intra_steps * intra + ph.inter_steps * inter;
}

double protocol_factor(const SkelPhase& ph, Protocol proto, const CollectiveParams& p) {
  return ph.protocol_scales_bytes ? p.protocol_bw_fraction[static_cast<size_t>(proto)] : 1.0;
}

double estimate(const Skeleton& sk, Protocol proto, const CollectiveParams& p) {
  double t = 0;
  for (const SkelPhase& ph : sk.phases) {
    t += phase_latency(ph, proto, p) + ph.max_link_time_s / protocol_factor(ph, proto, p);
  }
  return t;
}

CollectivePlan realise(const Skeleton& sk, Protocol proto, const CollectiveParams& p,
                       CollectiveOp op, const Layout& l, double S) {
  CollectivePlan plan;
  plan.op = op;
  plan.algorithm = sk.algorithm;
  plan.protocol = proto;
  plan.ranks = l.n;
  plan.domains = l.m();
  plan.channels = sk.channels;
  plan.bytes = S;
  for (const SkelPhase& ph : sk.phases) {
    Phase out;
    out.name = ph.name;
    out.latency_s = phase_latency(ph, proto, p);
    const double factor = protocol_factor(ph, proto, p);
    out.transfers.reserve(ph.bytes.size());
    for (const auto& [key, count] : ph.bytes) {
      const auto& [src, dst, bytes] = key;
      out.transfers.push_back(Transfer{src, dst, bytes / factor, count});
    }
    plan.phases.push_back(std::move(out));
  }
  plan.estimate_s = estimate(sk, proto, p);
  return plan;
}

}  // namespace

std::string_view to_string(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kAllReduce:
      return "all_reduce";
    case CollectiveOp::kAllGather:
      return "all_gather";
    case CollectiveOp::kReduceScatter:
      return "reduce_scatter";
    case CollectiveOp::kAllToAll:
      return "all_to_all";
    case CollectiveOp::kBroadcast:
      return "broadcast";
    case CollectiveOp::kSendRecv:
      return "send_recv";
  }
  return "all_reduce";
}

std::string_view to_string(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::kAuto:
      return "auto";
    case Algorithm::kRing:
      return "ring";
    case Algorithm::kTree:
      return "tree";
    case Algorithm::kHierarchical:
      return "hierarchical";
    case Algorithm::kNvls:
      return "nvls";
    case Algorithm::kDirect:
      return "direct";
  }
  return "auto";
}

std::string_view to_string(Protocol protocol) {
  switch (protocol) {
    case Protocol::kLL:
      return "LL";
    case Protocol::kLL128:
      return "LL128";
    case Protocol::kSimple:
      return "Simple";
  }
  return "Simple";
}

std::optional<CollectiveOp> parse_collective_op(std::string_view text) {
  for (CollectiveOp op :
       {CollectiveOp::kAllReduce, CollectiveOp::kAllGather, CollectiveOp::kReduceScatter,
        CollectiveOp::kAllToAll, CollectiveOp::kBroadcast, CollectiveOp::kSendRecv}) {
    if (text == to_string(op)) return op;
  }
  return std::nullopt;
}

std::optional<Algorithm> parse_algorithm(std::string_view text) {
  for (Algorithm a : {Algorithm::kAuto, Algorithm::kRing, Algorithm::kTree,
                      Algorithm::kHierarchical, Algorithm::kNvls, Algorithm::kDirect}) {
    if (text == to_string(a)) return a;
  }
  return std::nullopt;
}

double bus_bandwidth_factor(CollectiveOp op, int64_t ranks) {
  const double n = static_cast<double>(ranks);
  if (ranks <= 0) return 0.0;
  switch (op) {
    case CollectiveOp::kAllReduce:
      return 2 * (n - 1) / n;
    case CollectiveOp::kAllGather:
    case CollectiveOp::kReduceScatter:
    case CollectiveOp::kAllToAll:
      return (n - 1) / n;
    case CollectiveOp::kBroadcast:
    case CollectiveOp::kSendRecv:
      return 1.0;
  }
  return 1.0;
}

CollectiveParams CollectiveParams::for_gpu(const GpuSpec& gpu) {
  CollectiveParams p;
  // NCCL tuning.cc: NVLS efficiency 0.74 on Blackwell (vs 0.85 on Hopper).
  if (gpu.name.find("B200") != std::string::npos || gpu.name.find("B300") != std::string::npos) {
    p.nvls_efficiency = 0.74;
  }
  return p;
}

int kernel_sms(const Fabric& fabric, const std::vector<int64_t>& group,
               const CollectiveParams& params) {
  std::map<int64_t, int> per_domain;
  for (const int64_t gpu : group) {
    if (gpu >= 0 && gpu < fabric.gpu_count()) ++per_domain[fabric.domain_of(gpu)];
  }
  if (per_domain.size() <= 1) return params.kernel_sms;
  int most = 0;
  for (const auto& [domain, members] : per_domain) most = std::max(most, members);
  const int nics = most == 1 ? 1 : std::max(1, fabric.spec().scale_out.nics_per_node);
  return std::min(params.kernel_sms, params.net_channels_per_nic * nics);
}

double CollectivePlan::total_bytes() const {
  double total = 0;
  for (const Phase& ph : phases) {
    for (const Transfer& t : ph.transfers) total += t.bytes * t.multiplicity;
  }
  return total;
}

size_t CollectivePlan::flow_count() const {
  size_t n = 0;
  for (const Phase& ph : phases) n += ph.transfers.size();
  return n;
}

std::vector<Algorithm> available_algorithms(const Fabric& fabric, CollectiveOp op,
                                            std::span<const int64_t> group) {
  return available(fabric, analyse(fabric, group), op);
}

CollectivePlan plan_collective(const Fabric& fabric, CollectiveOp op,
                               std::span<const int64_t> group, double bytes, Algorithm algorithm,
                               const CollectiveParams& params, std::optional<Protocol> protocol) {
  if (!(bytes >= 0) || !std::isfinite(bytes)) {
    throw std::invalid_argument("collective: bytes must be a finite number >= 0");
  }
  const Layout l = analyse(fabric, group);
  if (l.n == 1) {  // nothing to communicate
    CollectivePlan plan;
    plan.op = op;
    plan.algorithm = algorithm == Algorithm::kAuto ? Algorithm::kRing : algorithm;
    plan.ranks = 1;
    plan.domains = 1;
    plan.bytes = bytes;
    return plan;
  }
  const std::vector<Algorithm> algos = available(fabric, l, op);
  std::vector<Algorithm> candidates;
  if (algorithm == Algorithm::kAuto) {
    candidates = algos;
  } else {
    if (std::find(algos.begin(), algos.end(), algorithm) == algos.end()) {
      throw std::invalid_argument("collective: " + std::string(to_string(algorithm)) +
                                  " cannot run " + std::string(to_string(op)) +
                                  " here: " + why_not(fabric, l, op, algorithm));
    }
    candidates = {algorithm};
  }
  bool found = false;
  double best_time = std::numeric_limits<double>::infinity();
  Skeleton best;
  Protocol best_proto = Protocol::kSimple;
  for (Algorithm a : candidates) {
    Skeleton sk = build(fabric, l, op, bytes, a, params);
    measure(fabric, sk);
    for (Protocol p : {Protocol::kLL, Protocol::kLL128, Protocol::kSimple}) {
      if (protocol && *protocol != p) continue;
      if (sk.simple_only && p != Protocol::kSimple) continue;
      const double t = estimate(sk, p, params);
      if (t < best_time) {
        best_time = t;
        best_proto = p;
        found = true;
        best = sk;
      }
    }
  }
  if (!found) {
    throw std::invalid_argument("collective: protocol " + std::string(to_string(*protocol)) +
                                " is not available for the requested algorithm");
  }
  return realise(best, best_proto, params, op, l, bytes);
}

std::vector<Route> collective_routes(const FabricInstance& fabric, const CollectivePlan& plan,
                                     const RouteHook& route_hook) {
  std::vector<Route> routes;
  routes.reserve(plan.flow_count());
  for (const Phase& ph : plan.phases) {
    for (const Transfer& t : ph.transfers) {
      Route r = fabric.route(t.src, t.dst);
      for (sim::PathHop& h : r.hops) h.multiplicity = t.multiplicity;
      if (route_hook) route_hook(t, r);
      routes.push_back(std::move(r));
    }
  }
  return routes;
}

ScheduledCollective add_collective(sim::Engine& engine, const CollectivePlan& plan,
                                   std::span<const Route> routes, uint32_t tag) {
  if (routes.size() != plan.flow_count()) {
    throw std::invalid_argument("add_collective: " + std::to_string(routes.size()) +
                                " routes for a plan of " + std::to_string(plan.flow_count()) +
                                " transfers");
  }
  std::optional<ScheduledCollective> whole;
  size_t next_route = 0;
  for (const Phase& ph : plan.phases) {
    // The phase latency already holds the path latency (NCCL's step
    // latencies plus the fabric's), so each flow waits exactly that.
    const sim::Time latency = sim::Time::from_seconds_ceil(ph.latency_s);
    auto add_transfer = [&](const Transfer& t) {
      const Route& r = routes[next_route++];
      return r.hops.empty() ? engine.add_delay(latency, sim::kNoStream, tag)
                            : engine.add_flow(t.bytes, r.hops, latency, sim::kNoStream, tag);
    };
    ScheduledCollective phase;
    if (ph.transfers.size() == 1) {
      phase.entry = phase.exit = add_transfer(ph.transfers.front());
    } else if (ph.transfers.empty()) {
      phase.entry = phase.exit = engine.add_delay(latency, sim::kNoStream, tag);
    } else {
      phase.entry = engine.add_join(tag);
      phase.exit = engine.add_join(tag);
      for (const Transfer& t : ph.transfers) {
        const sim::ActivityId a = add_transfer(t);
        engine.add_dependency(phase.entry, a);
        engine.add_dependency(a, phase.exit);
      }
    }
    if (whole) {
      engine.add_dependency(whole->exit, phase.entry);
      whole->exit = phase.exit;
    } else {
      whole = phase;
    }
  }
  if (!whole) {
    const sim::ActivityId j = engine.add_join(tag);
    whole = ScheduledCollective{j, j};
  }
  return *whole;
}

ScheduledCollective add_collective(sim::Engine& engine, const FabricInstance& fabric,
                                   const CollectivePlan& plan, uint32_t tag,
                                   const RouteHook& route_hook) {
  return add_collective(engine, plan, collective_routes(fabric, plan, route_hook), tag);
}

sim::ActivityId schedule_collective(sim::Engine& engine, const FabricInstance& fabric,
                                    const CollectivePlan& plan,
                                    std::span<const sim::ActivityId> after, uint32_t tag) {
  const ScheduledCollective c = add_collective(engine, fabric, plan, tag);
  for (sim::ActivityId d : after) engine.add_dependency(d, c.entry);
  return c.exit;
}

CollectiveResult predict_collective(const Fabric& fabric, CollectiveOp op,
                                    std::span<const int64_t> group, double bytes,
                                    Algorithm algorithm, const CollectiveParams& params,
                                    std::optional<Protocol> protocol) {
  CollectiveResult result;
  result.plan = plan_collective(fabric, op, group, bytes, algorithm, params, protocol);
  sim::Engine engine;
  const size_t flows = result.plan.flow_count();
  engine.reserve(flows + 2 * result.plan.phases.size() + 1, 2 * flows + 2);
  const FabricInstance inst = fabric.instantiate(engine);
  const sim::ActivityId end = schedule_collective(engine, inst, result.plan);
  const sim::RunResult run = engine.run();
  if (!run.completed()) {
    throw std::logic_error("collective: simulation did not complete: " + run.deadlock_report);
  }
  result.events = run.events;
  result.time_s = engine.finish_time(end).seconds();
  if (result.time_s > 0) {
    result.algbw_bytes_per_s = bytes / result.time_s;
    result.busbw_bytes_per_s =
        result.algbw_bytes_per_s * bus_bandwidth_factor(op, result.plan.ranks);
  }
  return result;
}

std::vector<CollectiveResult> collective_sweep(const ClusterSpec& cluster, CollectiveOp op,
                                               int64_t gpus, std::span<const double> sizes,
                                               Algorithm algorithm) {
  if (gpus < 1 || gpus > cluster.total_gpus()) {
    throw std::invalid_argument("gpus: " + std::to_string(gpus) + " is outside 1.." +
                                std::to_string(cluster.total_gpus()) + " (cluster '" +
                                cluster.name + "' has " + std::to_string(cluster.nodes) +
                                " nodes x " + std::to_string(cluster.gpus_per_node) + " GPUs)");
  }
  const Fabric fabric = Fabric::build(cluster);
  const std::vector<int64_t> group = gpu_range(0, gpus);
  const CollectiveParams params = CollectiveParams::for_gpu(cluster.gpu);
  std::vector<CollectiveResult> out;
  out.reserve(sizes.size());
  for (double bytes : sizes) {
    out.push_back(predict_collective(fabric, op, group, bytes, algorithm, params));
  }
  return out;
}

std::vector<double> doubling_sizes(double min_bytes, double max_bytes) {
  std::vector<double> out;
  if (!(min_bytes > 0) || !(max_bytes >= min_bytes)) return out;
  for (double s = min_bytes; s <= max_bytes * (1 + 1e-12); s *= 2) out.push_back(s);
  return out;
}

std::vector<int64_t> gpu_range(int64_t first, int64_t count) {
  std::vector<int64_t> out(static_cast<size_t>(std::max<int64_t>(0, count)));
  for (size_t i = 0; i < out.size(); ++i) out[i] = first + static_cast<int64_t>(i);
  return out;
}

}  // namespace podsim::hwmodels
