// The refined bounds: from the representatives' schedule, every dependency
// and stream order, communication at its closed-form estimate (bounds.h says
// why they are bounds).
#include <algorithm>
#include <array>
#include <map>
#include <tuple>
#include <unordered_set>
#include <utility>
#include <vector>

#include "scenarios/step/step_simulation.h"
#include "scenarios/sweep/bounds_pricing.h"
#include "strategies/memory.h"

namespace podsim::scenarios {

using strategies::Job;
using strategies::TaskId;

using bounds_detail::lower;

const PlanBounds::Impl::CommShape& PlanBounds::Impl::comm_shape(hwmodels::CollectiveOp op,
                                                                const std::vector<int64_t>& members,
                                                                double bytes, uint8_t calls) {
  auto key = std::make_tuple(static_cast<int>(op), members, bytes, calls);
  auto it = comm_shapes.find(key);
  if (it != comm_shapes.end()) return it->second;
  const hwmodels::CollectivePlan plan =
      hwmodels::plan_back_to_back(fabric, op, members, bytes, calls, collectives);
  CommShape shape;
  shape.seconds = plan.estimate_s;
  std::map<uint32_t, double> per_link;
  for (const hwmodels::Phase& ph : plan.phases) {
    for (const hwmodels::Transfer& tr : ph.transfers) {
      for (uint32_t l : fabric.path(tr.src, tr.dst).links) {
        if (fabric.link(l).constrained) per_link[l] += tr.bytes * tr.multiplicity;
      }
    }
  }
  shape.link_bytes.assign(per_link.begin(), per_link.end());
  return comm_shapes.emplace(std::move(key), std::move(shape)).first->second;
}

PlanBounds::Bounds PlanBounds::Impl::refined(const Job& job) {
  strategies::BuildResult built =
      strategies::build_schedule(job, strategies::Scope::kRepresentatives);
  if (!built.schedule) return {};
  const strategies::Schedule& sched = *built.schedule;
  const strategies::TaskList& tasks = sched.tasks;
  const size_t n = tasks.size();
  constexpr int64_t kNone = -1;

  // Memory, rank by rank (one rank per stage).
  Bounds b;
  const double reserved = memory.runtime_bytes();
  {
    // For each communication task: the last compute task (program index on
    // its rank) it waits for directly, and the first compute task that waits
    // for it directly.
    std::vector<int64_t> waits_for(n, kNone), first_user(n, kNone);
    for (TaskId id = 0; id < n; ++id) {
      const bool compute = tasks[id].stream == strategies::Stream::kCompute;
      for (TaskId dep : sched.dependencies(id)) {
        if (tasks[dep].rank != tasks[id].rank) continue;
        const bool dep_compute = tasks[dep].stream == strategies::Stream::kCompute;
        if (!compute && dep_compute) {
          waits_for[id] = std::max<int64_t>(waits_for[id], dep);
        } else if (compute && !dep_compute) {
          if (first_user[dep] == kNone || first_user[dep] > id) first_user[dep] = id;
        }
      }
    }
    const std::vector<strategies::TaskMemory> deltas = strategies::task_memory(sched);
    for (size_t r = 0; r < sched.ranks.size(); ++r) {
      const TaskId begin = sched.rank_begin[r], end = sched.rank_begin[r + 1];
      // Bytes that change the bound when compute task T starts: +alloc of
      // communication tasks first used at T; -free of communication tasks
      // whose last awaited compute task is T or none (at the first task).
      // Adjustments that apply from a compute task on: + the allocation of a
      // communication task first awaited there; - the free of one whose last
      // awaited compute task is that one (or none: from the rank's start).
      std::map<int64_t, double> at;
      for (TaskId id = begin; id < end; ++id) {
        const strategies::Task& t = tasks[id];
        if (t.stream == strategies::Stream::kCompute) continue;
        const strategies::TaskMemory& m = deltas[id];
        if (m.alloc > 0 && first_user[id] != kNone) at[first_user[id]] += m.alloc;
        if (m.free > 0) at[std::max<int64_t>(waits_for[id], begin)] -= m.free;
      }
      double live = 0, peak = 0, prev_free = 0, pending = 0;
      for (TaskId id = begin; id < end; ++id) {
        auto it = at.find(id);
        if (it != at.end()) pending += it->second;
        const strategies::Task& t = tasks[id];
        if (t.stream != strategies::Stream::kCompute) continue;
        live += deltas[id].alloc - prev_free + pending;
        pending = 0;
        peak = std::max(peak, live);
        prev_free = deltas[id].free;
      }
      double fixed = reserved;
      for (double bytes : strategies::standing_memory(sched, r)) fixed += bytes;
      b.memory_bytes = std::max(b.memory_bytes, lower(fixed + peak));
    }
    b.can_fit = b.memory_bytes <= memory.capacity_bytes;
    if (!b.can_fit) return b;
  }

  // Durations: compute tasks as simulate() charges them, communication
  // tasks their plan's closed-form estimate. Meanwhile, the bytes every
  // collective instance puts on each constrained link (the engine's links).
  std::vector<double> duration(n, 0.0);
  std::vector<double> link_bytes(fabric.link_count(), 0.0);
  {
    std::vector<Groups> groups;
    for (int64_t rank : sched.ranks) groups.push_back(groups_of(sched.layout, rank));
    std::map<std::pair<size_t, int32_t>, double> work_seconds;
    struct PlanComm {
      const CommShape* shape = nullptr;
      uint64_t instances = 0;
    };
    std::map<std::tuple<int32_t, int64_t, int64_t, int, double, uint8_t>, PlanComm> shapes;
    std::unordered_set<int64_t> seen_instances;
    for (size_t r = 0; r < sched.ranks.size(); ++r) {
      const int64_t rank = sched.ranks[r];
      for (TaskId id = sched.rank_begin[r]; id < sched.rank_begin[r + 1]; ++id) {
        const strategies::Task& t = tasks[id];
        if (t.work >= 0) {
          auto key = std::make_pair(r, t.work);
          auto it = work_seconds.find(key);
          if (it == work_seconds.end()) {
            const double s =
                work_cost(job, sched.layout, groups[r], sched.works[static_cast<size_t>(t.work)]);
            it = work_seconds.emplace(key, s).first;
          }
          duration[id] = it->second;
          continue;
        }
        if (t.stream == strategies::Stream::kCompute) continue;  // no work, no time
        const bool p2p = t.group < 0;
        hwmodels::CollectiveOp op = collective_op(t.collective);
        std::vector<int64_t> members;
        if (p2p) {
          members = {rank, t.peer};
          op = hwmodels::CollectiveOp::kBroadcast;
        }
        auto key = std::make_tuple(p2p ? -1 : t.group, p2p ? rank : -1, p2p ? t.peer : -1,
                                   static_cast<int>(op), t.bytes, t.calls);
        auto it = shapes.find(key);
        if (it == shapes.end()) {
          const std::vector<int64_t>& group =
              p2p ? members : sched.groups[static_cast<size_t>(t.group)].ranks;
          it = shapes.emplace(key, PlanComm{&comm_shape(op, group, t.bytes, t.calls)}).first;
        }
        duration[id] = it->second.shape->seconds;
        // A collective instance runs once however many simulated members
        // name it; a transfer, once per task.
        if (!p2p) {
          if (!seen_instances.insert(t.instance()).second) continue;
        }
        ++it->second.instances;
      }
    }
    for (const auto& [key, comm] : shapes) {
      for (const auto& [l, bytes] : comm.shape->link_bytes) {
        link_bytes[l] += bytes * static_cast<double>(comm.instances);
      }
    }
  }
  // No link carries more than its capacity: the step lasts at least as long
  // as the busiest link needs for what the step puts on it.
  double busiest = 0;
  for (uint32_t l = 0; l < link_bytes.size(); ++l) {
    if (link_bytes[l] > 0) {
      busiest = std::max(busiest, link_bytes[l] / fabric.link(l).capacity_bytes_per_s);
    }
  }

  // Longest path (Kahn's order) over dependencies and stream order.
  std::vector<std::vector<TaskId>> next(n);
  std::vector<uint32_t> indegree(n, 0);
  for (size_t r = 0; r < sched.ranks.size(); ++r) {
    std::array<int64_t, strategies::kStreams> last{};
    last.fill(kNone);
    for (TaskId id = sched.rank_begin[r]; id < sched.rank_begin[r + 1]; ++id) {
      for (TaskId dep : sched.dependencies(id)) {
        next[dep].push_back(id);
        ++indegree[id];
      }
      int64_t& prev = last[static_cast<size_t>(tasks[id].stream)];
      if (prev != kNone) {
        next[static_cast<size_t>(prev)].push_back(id);
        ++indegree[id];
      }
      prev = id;
    }
  }
  std::vector<double> start(n, 0.0);
  std::vector<TaskId> ready;
  for (TaskId id = 0; id < n; ++id) {
    if (indegree[id] == 0) ready.push_back(id);
  }
  size_t visited = 0;
  double step = 0;
  while (!ready.empty()) {
    const TaskId id = ready.back();
    ready.pop_back();
    ++visited;
    const double end = start[id] + duration[id];
    step = std::max(step, end);
    for (TaskId succ : next[id]) {
      start[succ] = std::max(start[succ], end);
      if (--indegree[succ] == 0) ready.push_back(succ);
    }
  }
  if (visited != n) return b;  // a cycle: no step bound
  b.step_s = lower(std::max(step, busiest));
  return b;
}

PlanBounds::Bounds PlanBounds::refined(const Job& job) { return impl_->refined(job); }

}  // namespace podsim::scenarios
