#include "hwmodels/collectives.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "hwmodels/collective_algorithms.h"

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

using collective_detail::analyse;
using collective_detail::available;
using collective_detail::build;
using collective_detail::Layout;
using collective_detail::Skeleton;
using collective_detail::SkelPhase;
using collective_detail::why_not;

namespace {

constexpr int kSimple = static_cast<int>(Protocol::kSimple);

// Busiest link time and the cross-domain path latency of each phase.
/// The engine routes of `plan` on an engine that gets an engine link for each
/// link the plan's transfers cross (the ones Fabric::instantiate would give
/// one) and for no other. A collective predicted alone touches a few links of
/// a fabric that may have 150,000: instantiating all of them was most of a
/// prediction's cost. The links are created in the fabric's order, so the
/// only place the solver looks at link indices, the tie-break of its fill
/// heap, orders them as on a whole-fabric instance: the run is the same.
std::vector<Route> routes_on_own_links(const Fabric& fabric, const CollectivePlan& plan,
                                       sim::Engine& engine) {
  std::vector<FabricPath> paths;
  paths.reserve(plan.flow_count());
  std::vector<uint32_t> used;
  const bool prune = fabric.options().prune_unconstrained;
  for (const Phase& ph : plan.phases) {
    for (const Transfer& t : ph.transfers) {
      paths.push_back(fabric.path(t.src, t.dst));
      for (uint32_t l : paths.back().links) {
        if (fabric.link(l).constrained || !prune) used.push_back(l);
      }
    }
  }
  std::sort(used.begin(), used.end());
  used.erase(std::unique(used.begin(), used.end()), used.end());
  for (uint32_t l : used) engine.add_link(fabric.link(l).capacity_bytes_per_s);
  std::vector<Route> routes;
  routes.reserve(paths.size());
  size_t next = 0;
  for (const Phase& ph : plan.phases) {
    for (const Transfer& t : ph.transfers) {
      const FabricPath& p = paths[next++];
      Route r;
      r.latency_s = p.latency_s;
      for (uint32_t l : p.links) {
        const auto it = std::lower_bound(used.begin(), used.end(), l);
        if (it == used.end() || *it != l) continue;  // never a bottleneck: no engine link
        r.hops.push_back(
            sim::PathHop{sim::LinkId{static_cast<uint32_t>(it - used.begin())}, t.multiplicity});
      }
      routes.push_back(std::move(r));
    }
  }
  return routes;
}

void measure(const Fabric& f, Skeleton& sk) {
  // A phase touches a few links of what may be a 24,000-GPU fabric: its
  // loads are (link, bytes) pairs summed per link in transfer order, not a
  // vector over every link (that memset was most of a plan's cost).
  std::vector<std::pair<uint32_t, double>> loads;
  for (SkelPhase& ph : sk.phases) {
    loads.clear();
    ph.max_link_time_s = 0;
    ph.inter_latency_s = 0;
    for (const auto& [key, count] : ph.bytes) {
      const auto& [src, dst, bytes] = key;
      const FabricPath p = f.path(src, dst);
      for (uint32_t l : p.links) loads.emplace_back(l, bytes * count);
      if (src != kInNetwork && dst != kInNetwork && f.domain_of(src) != f.domain_of(dst)) {
        ph.inter_latency_s = std::max(ph.inter_latency_s, p.latency_s);
      }
    }
    std::stable_sort(loads.begin(), loads.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (size_t i = 0; i < loads.size();) {
      const uint32_t link = loads[i].first;
      double load = 0;
      for (; i < loads.size() && loads[i].first == link; ++i) load += loads[i].second;
      ph.max_link_time_s = std::max(ph.max_link_time_s, load / f.link(link).capacity_bytes_per_s);
    }
  }
}

double phase_latency(const SkelPhase& ph, Protocol proto, const CollectiveParams& p) {
  if (ph.own_latency_s >= 0) return ph.own_latency_s;
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
    case Algorithm::kTorus:
      return "torus";
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
  for (Algorithm a :
       {Algorithm::kAuto, Algorithm::kRing, Algorithm::kTree, Algorithm::kHierarchical,
        Algorithm::kNvls, Algorithm::kDirect, Algorithm::kTorus}) {
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

CollectiveParams CollectiveParams::for_cluster(const ClusterSpec& cluster) {
  CollectiveParams p;
  const std::string& gpu = cluster.gpu.name;
  // NCCL tuning.cc: NVLS efficiency 0.74 on Blackwell (vs 0.85 on Hopper).
  if (gpu.find("B200") != std::string::npos || gpu.find("B300") != std::string::npos) {
    p.nvls_efficiency = 0.74;
  }
  const double hop_change_s = cluster.scale_up.latency_s - kNcclNvlinkHopS;
  for (auto& row : p.nvlink_step_latency_s) {
    for (double& step_s : row) {
      if (step_s > 0) step_s = std::max(0.0, step_s + hop_change_s);  // 0: no such protocol
    }
  }
  return p;
}

int kernel_sms(const Fabric& fabric, const std::vector<int64_t>& group,
               const CollectiveParams& params) {
  if (fabric.topology() == ScaleUpTopology::kTorus) return 0;
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
      // The first candidate stands even when its estimate is infinite (links
      // too slow for any finite time): the engine reports such a time.
      const double t = estimate(sk, p, params);
      if (!found || t < best_time) {
        best_time = t;
        best_proto = p;
        found = true;
        best = sk;
      }
    }
  }
  if (!found) {  // only a protocol the algorithm lacks leaves no candidate
    throw std::invalid_argument("collective: protocol " +
                                std::string(protocol ? to_string(*protocol) : "(any)") +
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
  const sim::ActivityId end =
      add_collective(engine, result.plan, routes_on_own_links(fabric, result.plan, engine)).exit;
  const sim::RunResult run = engine.run();
  result.events = run.events;
  if (run.beyond_clock) {
    result.time_s = std::numeric_limits<double>::infinity();
    return result;
  }
  if (!run.completed()) {
    throw std::logic_error("collective: simulation did not complete: " + run.deadlock_report);
  }
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
  FabricOptions options;
  options.gpus = gpus;
  const Fabric fabric = Fabric::build(cluster, options);
  const std::vector<int64_t> group = gpu_range(0, gpus);
  const CollectiveParams params = CollectiveParams::for_cluster(cluster);
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

CollectivePlan plan_back_to_back(const Fabric& fabric, CollectiveOp op,
                                 std::span<const int64_t> group, double bytes, int64_t calls,
                                 const CollectiveParams& params) {
  if (calls < 1) throw std::invalid_argument("collective: calls must be at least 1");
  const auto times = static_cast<double>(calls);
  CollectivePlan plan = plan_collective(fabric, op, group, bytes / times, Algorithm::kAuto, params);
  if (calls == 1) return plan;
  plan.bytes *= times;
  plan.estimate_s *= times;
  for (Phase& phase : plan.phases) {
    phase.latency_s *= times;
    for (Transfer& t : phase.transfers) t.bytes *= times;
  }
  return plan;
}

}  // namespace podsim::hwmodels
