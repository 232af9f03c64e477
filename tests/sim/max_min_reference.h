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

}  // namespace podsim::sim::reference
