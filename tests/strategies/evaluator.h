#pragma once

#include <algorithm>
#include <functional>
#include <initializer_list>
#include <vector>

#include "strategies/schedule.h"

namespace podsim::strategies::testing {

/// Start and finish of every task of a schedule run by an earliest-start list
/// scheduler: a task starts when its dependencies and the previous task of
/// its (rank, stream) have finished. No contention beyond the streams, so
/// communication is free when its duration is 0.
struct Timeline {
  std::vector<double> start, finish;
  size_t done = 0;  ///< tasks that ran; < tasks.size() means a cycle
  double makespan = 0;
};

inline Timeline evaluate(const Schedule& s, const std::function<double(const Task&)>& duration) {
  const size_t n = s.tasks.size();
  // Implicit edge: the previous task on the same rank and stream.
  std::vector<std::vector<TaskId>> succ(n);
  std::vector<int> indegree(n, 0);
  for (size_t ri = 0; ri < s.ranks.size(); ++ri) {
    std::vector<int64_t> last(kStreams, -1);
    for (uint32_t t = s.rank_begin[ri]; t < s.rank_begin[ri + 1]; ++t) {
      const auto stream = static_cast<size_t>(s.tasks[t].stream);
      if (last[stream] >= 0) {
        succ[static_cast<size_t>(last[stream])].push_back(t);
        ++indegree[t];
      }
      last[stream] = t;
    }
  }
  for (TaskId t = 0; t < n; ++t) {
    for (TaskId before : s.dependencies(t)) {
      succ[before].push_back(t);
      ++indegree[t];
    }
  }
  Timeline tl;
  tl.start.assign(n, 0);
  tl.finish.assign(n, 0);
  std::vector<TaskId> ready;
  for (TaskId t = 0; t < n; ++t) {
    if (indegree[t] == 0) ready.push_back(t);
  }
  while (!ready.empty()) {
    const TaskId t = ready.back();
    ready.pop_back();
    tl.finish[t] = tl.start[t] + duration(s.tasks[t]);
    tl.makespan = std::max(tl.makespan, tl.finish[t]);
    ++tl.done;
    for (TaskId next : succ[t]) {
      tl.start[next] = std::max(tl.start[next], tl.finish[t]);
      if (--indegree[next] == 0) ready.push_back(next);
    }
  }
  return tl;
}

/// Unit costs per layer: F 1, B 2 (or Bi 1 + W 1), R `recompute` (0 by
/// default), embedding, head, optimizer and communication free.
inline std::function<double(const Task&)> layer_costs(double forward = 1, double backward = 2,
                                                      double recompute = 0) {
  return [=](const Task& t) {
    const double layers = t.layer_end - t.layer_begin;
    switch (t.kind) {
      case TaskKind::kForward:
        return forward * layers;
      case TaskKind::kBackward:
        return backward * layers;
      case TaskKind::kBackwardInput:
      case TaskKind::kBackwardWeight:
        return backward / 2 * layers;
      case TaskKind::kRecompute:
        return recompute * layers;
      default:
        return 0.0;
    }
  };
}

/// Makespan with layer_costs(1, 2, `recompute`) and one unit for every
/// communication task of the `unit_purposes`.
inline double makespan_with_unit_comms(const Schedule& s, double recompute,
                                       std::initializer_list<CommPurpose> unit_purposes) {
  const auto costs = layer_costs(1, 2, recompute);
  return evaluate(s,
                  [&](const Task& t) {
                    for (CommPurpose p : unit_purposes) {
                      if (t.purpose == p) return 1.0;
                    }
                    return costs(t);
                  })
      .makespan;
}

/// Busy time of rank index `ri`'s compute stream.
inline double compute_busy(const Schedule& s, size_t ri,
                           const std::function<double(const Task&)>& duration) {
  double busy = 0;
  for (const Task& t : s.rank_tasks(ri)) {
    if (t.stream == Stream::kCompute) busy += duration(t);
  }
  return busy;
}

/// Peak of the kept activations (the per-step buffers of kind
/// kActivations) walking one rank's tasks of `stream` in program order, each
/// task's allocations before its frees.
inline double peak_in_order(const Schedule& s, size_t ri, Stream stream = Stream::kCompute) {
  std::vector<double> alloc(s.tasks.size(), 0.0), free(s.tasks.size(), 0.0);
  for (const Buffer& b : s.buffers) {
    if (b.lifetime != Lifetime::kStep || b.kind != MemoryKind::kActivations) continue;
    alloc[b.alloc] += s.bytes(b);
    free[b.free] += s.bytes(b);
  }
  double now = 0, peak = 0;
  for (TaskId id = s.rank_begin[ri]; id < s.rank_begin[ri + 1]; ++id) {
    if (s.tasks[id].stream != stream) continue;
    now += alloc[id];
    peak = std::max(peak, now);
    now -= free[id];
  }
  return peak;
}

}  // namespace podsim::strategies::testing
