#include "scenarios/step/step_simulation.h"

#include <algorithm>
#include <array>
#include <map>
#include <numeric>
#include <span>
#include <stdexcept>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "scenarios/step/work_pricing.h"

namespace podsim::scenarios {
namespace {

using strategies::GroupKind;
using strategies::Op;
using strategies::OpKind;
using strategies::Schedule;
using strategies::Task;

/// `hash` with `value` mixed in (for the lowering's hash tables).
uint64_t mix_hash(uint64_t hash, uint64_t value) {
  hash = (hash ^ value) * 0x9e3779b97f4a7c15ULL;
  return hash ^ (hash >> 29);
}

/// How many times as long `work`'s compute takes on `rank`: its own GPU's
/// slowdown, or that of the slowest member of any group the work has an
/// in-task collective on (the collective waits for it, op by op).
double work_slowdown(const Schedule& schedule, const Degradation& degradation, int32_t work,
                     int64_t rank) {
  auto slowdown_of = [&](int64_t r) {
    const auto it = degradation.gpu_slowdown.find(r);
    return it == degradation.gpu_slowdown.end() ? 1.0 : it->second;
  };
  double slowdown = slowdown_of(rank);
  std::array<bool, strategies::kGroupKinds> seen{};
  for (const strategies::Segment& seg : schedule.works[static_cast<size_t>(work)].segments) {
    for (const Op& op : seg.ops) {
      if (op.kind != OpKind::kCollective) continue;
      const GroupKind kind = in_work_group_kind(op.collective);
      if (seen[static_cast<size_t>(kind)]) continue;
      seen[static_cast<size_t>(kind)] = true;
      for (const int64_t member : schedule.layout.group(rank, kind)) {
        slowdown = std::max(slowdown, slowdown_of(member));
      }
    }
  }
  return slowdown;
}

/// Capacity factors of the fabric's links (empty: all healthy).
std::vector<double> link_factors(const hwmodels::Fabric& fabric, const Degradation& degradation) {
  if (degradation.nic_rate_fraction.empty()) return {};
  std::vector<double> factors(fabric.link_count(), 1.0);
  for (const auto& [rank, fraction] : degradation.nic_rate_fraction) {
    for (const uint32_t l : fabric.nic_links(fabric.nic_of(rank))) {
      factors[l] = std::min(factors[l], fraction);
    }
  }
  return factors;
}

/// Layout::distinct_shifts of the rank sets of a schedule's collectives,
/// each found once.
class Images {
 public:
  explicit Images(const strategies::Layout& layout) : layout_(layout) {}

  const std::vector<int64_t>& distinct(const std::vector<int64_t>& ranks) {
    auto it = cache_.find(ranks);
    if (it == cache_.end()) it = cache_.emplace(ranks, layout_.distinct_shifts(ranks)).first;
    return it->second;
  }

  /// `rank` moved by `shift`; an in-network endpoint stays where it is.
  int64_t apply(int64_t shift, int64_t rank) const {
    return rank == hwmodels::kInNetwork ? rank : layout_.shifted(rank, shift);
  }

 private:
  const strategies::Layout& layout_;
  std::map<std::vector<int64_t>, std::vector<int64_t>> cache_;
};

/// Hop multiplicities of transfers under the symmetric scope: how many
/// images of the transfer cross each link of its own route.
class ImageCounter {
 public:
  ImageCounter(Images& images, const hwmodels::FabricInstance& fabric)
      : images_(images), fabric_(fabric) {}

  /// `shifts`: Images::distinct of the members of the transfer's collective.
  void weigh(const std::vector<int64_t>& shifts, const hwmodels::Transfer& t,
             hwmodels::Route& route) {
    const auto key = std::make_tuple(t.src, t.dst, &shifts);
    auto it = counts_.find(key);
    if (it == counts_.end()) {
      std::vector<uint32_t> counts(route.hops.size(), 1);  // the transfer itself
      for (size_t s = 1; s < shifts.size(); ++s) {
        const hwmodels::Route image =
            fabric_.route(images_.apply(shifts[s], t.src), images_.apply(shifts[s], t.dst));
        for (const sim::PathHop& hop : image.hops) {
          for (size_t h = 0; h < route.hops.size(); ++h) {
            if (route.hops[h].link == hop.link) ++counts[h];
          }
        }
      }
      it = counts_.emplace(key, std::move(counts)).first;
    }
    for (size_t h = 0; h < route.hops.size(); ++h) route.hops[h].multiplicity *= it->second[h];
  }

 private:
  Images& images_;
  const hwmodels::FabricInstance& fabric_;
  std::map<std::tuple<int64_t, int64_t, const std::vector<int64_t>*>, std::vector<uint32_t>>
      counts_;
};

}  // namespace

StepTimeline simulate_schedule(const Schedule& schedule, const StepHardware& hardware,
                               size_t max_flows) {
  const strategies::TaskList& tasks = schedule.tasks;
  const bool symmetric = schedule.scope == strategies::Scope::kRepresentatives;
  static const Degradation kHealthy;
  const Degradation& degradation = hardware.degradation ? *hardware.degradation : kHealthy;
  if (symmetric) {
    for (const auto* parts : {&degradation.gpu_slowdown, &degradation.nic_rate_fraction}) {
      for (const auto& [rank, factor] : *parts) {
        if (schedule.rank_index(rank) < 0) {
          throw std::logic_error("degraded rank " + std::to_string(rank) +
                                 " is not in the simulated replica: simulate every rank");
        }
      }
    }
  }
  StepTimeline out;
  out.task_cost.assign(tasks.size(), StepTimeline::kNoCost);

  sim::Engine engine;
  // About one activity per task (compute delays and pipeline flows; the
  // data-parallel collectives add a few joins and flows each) and one
  // dependency per schedule edge plus one per stream predecessor.
  engine.reserve(tasks.size() + tasks.size() / 16,
                 schedule.deps.size() + tasks.size() + tasks.size() / 8);
  // Each task's first and last activity.
  sim::BulkVector<sim::ActivityId> start(tasks.size()), end(tasks.size());
  {
    // What the activities are made from, released before the run so that
    // the run's arrays reuse its memory.
    const hwmodels::FabricInstance fabric =
        hardware.fabric.instantiate(engine, link_factors(hardware.fabric, degradation));
    Pricer pricer(schedule, hardware);
    Images images(schedule.layout);
    ImageCounter counter(images, fabric);

    // Work costs by the rank's TP/CP/EP/expert-TP groups (ranks whose groups
    // coincide share them), then by work: index into out.costs, in first-use
    // order. A work a degraded GPU slows is priced by (work, groups, slowdown)
    // instead.
    using RankGroups = std::tuple<int64_t, int64_t, int64_t, int64_t>;
    std::map<RankGroups, std::vector<uint32_t>> cost_index;
    std::map<std::tuple<int32_t, RankGroups, uint64_t>, uint32_t> slowed_cost_index;
    // Congruent groups (every TP group of an every-rank step placed alike)
    // give a work equal costs: each distinct cost is kept once.
    std::unordered_map<uint64_t, std::vector<uint32_t>> costs_by_hash;
    auto intern_cost = [&](WorkCost&& cost) {
      uint64_t h = cost.collectives.size();
      for (const double v : {cost.duration_s, cost.sequence_s, cost.compute_s, cost.host_s}) {
        h = mix_hash(h, bits_of(v));
      }
      std::vector<uint32_t>& same_hash = costs_by_hash[h];
      for (const uint32_t index : same_hash) {
        if (out.costs[index] == cost) return index;
      }
      const auto index = static_cast<uint32_t>(out.costs.size());
      out.costs.push_back(std::move(cost));
      same_hash.push_back(index);
      return index;
    };
    std::unordered_map<int64_t, hwmodels::ScheduledCollective> instances;
    // Plans by (group or -1, sender, receiver, op, bytes): the data-parallel
    // buckets and pipeline transfers of a step repeat a few shapes many times.
    // Each is routed (and, when symmetric, weighed) once, with the share of
    // the SMs its kernels hold.
    struct RoutedPlan {
      hwmodels::CollectivePlan plan;
      std::vector<hwmodels::Route> routes;
      double sm_share = 0;
    };
    using PlanKey = std::tuple<int32_t, int64_t, int64_t, int, uint64_t, uint8_t>;
    struct PlanKeyHash {
      size_t operator()(const PlanKey& k) const {
        uint64_t h = static_cast<uint64_t>(std::get<0>(k));
        for (const uint64_t v :
             {static_cast<uint64_t>(std::get<1>(k)), static_cast<uint64_t>(std::get<2>(k)),
              static_cast<uint64_t>(std::get<3>(k)), std::get<4>(k),
              static_cast<uint64_t>(std::get<5>(k))}) {
          h = mix_hash(h, v);
        }
        return static_cast<size_t>(h);
      }
    };
    std::unordered_map<PlanKey, RoutedPlan, PlanKeyHash> plans;
    // Each simulated GPU's SMs (pool i is schedule.ranks[i]'s): its compute
    // tasks run on them, and every NCCL kernel it takes part in holds some of
    // them while the transfer is in flight (hwmodels::kernel_sms), so compute
    // beside communication slows.
    std::vector<sim::PoolId> sms;
    sms.reserve(schedule.ranks.size());
    for (size_t r = 0; r < schedule.ranks.size(); ++r) sms.push_back(engine.add_pool());
    std::vector<sim::PoolId> held_sms;  // scratch: the simulated members' SMs of one collective

    auto add_comm = [&](const Task& task, int64_t rank, uint32_t id) {
      const bool p2p = task.group < 0;
      const std::array<int64_t, 2> pair{rank, task.peer};
      const std::span<const int64_t> members =
          p2p ? std::span<const int64_t>(pair)
              : std::span<const int64_t>(schedule.groups[static_cast<size_t>(task.group)].ranks);
      const hwmodels::CollectiveOp op =
          p2p ? hwmodels::CollectiveOp::kBroadcast : collective_op(task.collective);
      const PlanKey plan_key{p2p ? -1 : task.group, p2p ? rank : -1,     p2p ? task.peer : -1,
                             static_cast<int>(op),  bits_of(task.bytes), task.calls};
      auto plan = plans.find(plan_key);
      if (plan == plans.end()) {
        const std::vector<int64_t> group(members.begin(), members.end());
        RoutedPlan routed;
        routed.plan = hwmodels::plan_back_to_back(hardware.fabric, op, group, task.bytes,
                                                  task.calls, hardware.collectives);
        hwmodels::RouteHook hook;
        if (symmetric) {
          const std::vector<int64_t>* shifts = &images.distinct(group);
          hook = [&counter, shifts](const hwmodels::Transfer& t, hwmodels::Route& route) {
            counter.weigh(*shifts, t, route);
          };
        }
        routed.routes = hwmodels::collective_routes(fabric, routed.plan, hook);
        routed.sm_share = pricer.comm_sm_share(group);
        plan = plans.emplace(plan_key, std::move(routed)).first;
      }
      out.flows += plan->second.plan.flow_count();
      const hwmodels::ScheduledCollective c =
          hwmodels::add_collective(engine, plan->second.plan, plan->second.routes, id);
      const double share = plan->second.sm_share;
      if (share > 0) {
        held_sms.clear();
        for (const int64_t m : members) {
          const int64_t index = schedule.rank_index(m);
          if (index >= 0) held_sms.push_back(sms[static_cast<size_t>(index)]);
        }
        engine.add_hold(c.entry, c.exit, held_sms, share);
      }
      return c;
    };

    for (size_t r = 0; r < schedule.ranks.size(); ++r) {
      const int64_t rank = schedule.ranks[r];
      auto group_id = [&](GroupKind kind) {
        const std::vector<int64_t> g = schedule.layout.group(rank, kind);
        return *std::min_element(g.begin(), g.end());
      };
      const RankGroups rank_groups{group_id(GroupKind::kTp), group_id(GroupKind::kCp),
                                   group_id(GroupKind::kEp), group_id(GroupKind::kExpertTp)};
      std::vector<uint32_t>& rank_costs = cost_index[rank_groups];
      rank_costs.resize(schedule.works.size(), StepTimeline::kNoCost);
      auto next_task = schedule.rank_tasks(r).begin();
      for (uint32_t id = schedule.rank_begin[r]; id < schedule.rank_begin[r + 1]; ++id) {
        const Task task = *next_task++;
        if (task.work >= 0) {
          const double slowdown = degradation.gpu_slowdown.empty()
                                      ? 1.0
                                      : work_slowdown(schedule, degradation, task.work, rank);
          uint32_t cost = StepTimeline::kNoCost;
          if (slowdown == 1.0) {
            uint32_t& shared = rank_costs[static_cast<size_t>(task.work)];
            if (shared == StepTimeline::kNoCost) {
              shared = intern_cost(price_work(schedule, pricer, task.work, rank, slowdown));
            }
            cost = shared;
          } else {
            const auto key = std::make_tuple(task.work, rank_groups, bits_of(slowdown));
            auto it = slowed_cost_index.find(key);
            if (it == slowed_cost_index.end()) {
              it = slowed_cost_index.emplace(key, static_cast<uint32_t>(out.costs.size())).first;
              out.costs.push_back(price_work(schedule, pricer, task.work, rank, slowdown));
            }
            cost = it->second;
          }
          out.task_cost[id] = cost;
          const sim::ActivityId a = engine.add_pool_work(
              sim::Time::from_seconds_ceil(out.costs[cost].duration_s), sms[r], sim::kNoStream, id);
          start[id] = end[id] = a;
          continue;
        }
        // Communication: one set of flows per collective instance, shared by
        // the simulated members; a pipeline transfer is a broadcast from the
        // sender to its peer.
        if (task.group < 0) {
          const hwmodels::ScheduledCollective c = add_comm(task, rank, id);
          start[id] = c.entry;
          end[id] = c.exit;
        } else {
          auto inst = instances.find(task.instance());
          if (inst == instances.end()) {
            inst = instances.emplace(task.instance(), add_comm(task, rank, id)).first;
          }
          start[id] = inst->second.entry;
          end[id] = inst->second.exit;
        }
        if (out.flows > max_flows) {
          out.too_many_flows_task = id;
          return out;
        }
      }
    }
  }

  // Dependencies: the schedule's, and the previous task of the same stream.
  for (size_t r = 0; r < schedule.ranks.size(); ++r) {
    std::array<int64_t, strategies::kStreams> last{};
    last.fill(-1);
    auto next_task = schedule.rank_tasks(r).begin();
    for (uint32_t id = schedule.rank_begin[r]; id < schedule.rank_begin[r + 1]; ++id) {
      const Task task = *next_task++;
      for (strategies::TaskId dep : schedule.dependencies(task)) {
        engine.add_dependency(end[dep], start[id]);
      }
      int64_t& prev = last[static_cast<size_t>(task.stream)];
      if (prev >= 0) engine.add_dependency(end[static_cast<size_t>(prev)], start[id]);
      prev = id;
    }
  }

  out.activities = engine.activity_count();
  out.run = engine.run();
  if (out.run.beyond_clock) {
    out.beyond_clock_task = engine.tag(*out.run.beyond_clock);
    return out;
  }
  if (!out.run.completed()) {
    std::string stuck;
    for (size_t i = 0; i < out.run.deadlocked.size() && i < 20; ++i) {
      stuck += "\n  " + schedule.task_name(engine.tag(out.run.deadlocked[i]));
    }
    throw std::logic_error("step simulation deadlocked (a schedule bug); stuck tasks:" + stuck);
  }
  out.tasks.resize(tasks.size());
  for (size_t id = 0; id < tasks.size(); ++id) {
    out.tasks[id] = {engine.start_time(start[id]), engine.finish_time(end[id])};
  }
  return out;
}

}  // namespace podsim::scenarios
