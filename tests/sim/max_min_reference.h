#pragma once

// A naive, global max-min fair solver for tests: progressive filling that
// recomputes every link's fair share from scratch at every step (no heap, no
// incremental state), to check the engine's solver against.

#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

namespace podsim::sim::reference {

struct RefFlow {
  double bytes = 0;
  std::vector<std::pair<int, int>> hops;  // (link, multiplicity)
  double cap = 0;                         // 0: none
  double start_s = 0;
};

/// Max-min fair rates of the `active` flows (others get 0).
inline std::vector<double> naive_max_min(const std::vector<double>& capacity,
                                         const std::vector<RefFlow>& flows,
                                         const std::vector<int>& active) {
  std::vector<double> rate(flows.size(), 0.0);
  std::vector<bool> frozen(flows.size(), true);
  for (const int f : active) frozen[f] = false;
  size_t left = active.size();
  while (left > 0) {
    double best = std::numeric_limits<double>::infinity();
    std::vector<double> share(capacity.size(), std::numeric_limits<double>::infinity());
    for (size_t l = 0; l < capacity.size(); ++l) {
      double used = 0, weight = 0;
      for (const int f : active) {
        for (const auto& [link, m] : flows[f].hops) {
          if (link != static_cast<int>(l)) continue;
          if (frozen[f]) {
            used += m * rate[f];
          } else {
            weight += m;
          }
        }
      }
      if (weight > 0) share[l] = std::max(0.0, capacity[l] - used) / weight;
      best = std::min(best, share[l]);
    }
    for (const int f : active) {
      if (!frozen[f] && flows[f].cap > 0) best = std::min(best, flows[f].cap);
    }
    const double tie = best * (1 + 1e-12);
    for (const int f : active) {
      if (frozen[f]) continue;
      bool saturated = flows[f].cap > 0 && flows[f].cap <= tie;
      for (const auto& [link, m] : flows[f].hops) saturated = saturated || share[link] <= tie;
      if (saturated) {
        rate[f] = best;
        frozen[f] = true;
        --left;
      }
    }
  }
  return rate;
}

/// Finish times (seconds) of `flows` started at their start_s, by a global
/// fluid simulation in doubles: every rate from scratch at every event.
inline std::vector<double> reference_finish_s(const std::vector<double>& capacity,
                                              const std::vector<RefFlow>& flows) {
  std::vector<double> finish(flows.size(), -1), remaining(flows.size());
  std::vector<bool> started(flows.size(), false);
  std::vector<int> active;
  double t = 0;
  size_t done = 0;
  while (done < flows.size()) {
    for (size_t f = 0; f < flows.size(); ++f) {
      if (!started[f] && flows[f].start_s <= t) {
        started[f] = true;
        remaining[f] = flows[f].bytes;
        active.push_back(static_cast<int>(f));
      }
    }
    const std::vector<double> rate = naive_max_min(capacity, flows, active);
    double next = std::numeric_limits<double>::infinity();
    for (size_t f = 0; f < flows.size(); ++f) {
      if (!started[f]) next = std::min(next, flows[f].start_s);
    }
    for (const int f : active) next = std::min(next, t + remaining[f] / rate[f]);
    const double dt = next - t;
    t = next;
    std::vector<int> still;
    for (const int f : active) {
      remaining[f] -= rate[f] * dt;
      if (remaining[f] <= 1e-9 * flows[f].bytes) {
        finish[f] = t;
        ++done;
      } else {
        still.push_back(f);
      }
    }
    active = still;
  }
  return finish;
}

}  // namespace podsim::sim::reference
