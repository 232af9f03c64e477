#include "sim/flow_network.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace podsim::sim {
namespace {

// Fair shares within this relative distance of the current fill level are the
// same level: flows that are symmetric in exact arithmetic then get bit-equal
// rates although their links' residuals were reached by different sums.
constexpr double kTieRel = 1e-12;
// A recomputed rate this close to the old one is not a change: the flow keeps
// its completion event instead of being rescheduled for rounding noise.
constexpr double kRateRel = 1e-12;
constexpr double kInf = std::numeric_limits<double>::infinity();

[[noreturn]] void internal_error(const char* what) {
  std::fprintf(stderr, "podsim::sim::FlowNetwork: internal error: %s\n", what);
  std::abort();
}

// Min-heap order on (share, link): deterministic among equal shares.
bool share_after(double share_a, uint32_t link_a, double share_b, uint32_t link_b) {
  return share_a > share_b || (share_a == share_b && link_a > link_b);
}

}  // namespace

uint32_t FlowNetwork::add_link(double capacity_bytes_per_s) {
  const auto index = static_cast<uint32_t>(capacity_.size());
  capacity_.push_back(capacity_bytes_per_s);
  link_flows_.emplace_back();
  link_mark_.push_back(0);
  link_touched_.push_back(0);
  link_version_.push_back(0);
  residual_.push_back(0.0);
  weight_.push_back(0);
  return index;
}

uint32_t FlowNetwork::add_flow(std::span<const PathHop> path, double max_rate_bytes_per_s) {
  const auto index = static_cast<uint32_t>(cap_.size());
  if (hops_.size() + path.size() >= std::numeric_limits<uint32_t>::max()) {
    internal_error("more than 2^32 path hops in total");
  }
  for (const PathHop& hop : path) {
    hops_.push_back(Hop{hop.link.index, hop.multiplicity, 0});
  }
  hop_begin_.push_back(static_cast<uint32_t>(hops_.size()));
  cap_.push_back(max_rate_bytes_per_s);
  rate_.push_back(0.0);
  active_.push_back(0);
  flow_mark_.push_back(0);
  flow_frozen_.push_back(0);
  return index;
}

void FlowNetwork::activate(uint32_t flow) {
  if (active_[flow]) internal_error("activate: flow already active");
  active_[flow] = 1;
  rate_[flow] = 0.0;
  for (uint32_t h = hop_begin_[flow]; h < hop_begin_[flow + 1]; ++h) {
    std::vector<Slot>& slots = link_flows_[hops_[h].link];
    hops_[h].slot = static_cast<uint32_t>(slots.size());
    slots.push_back(Slot{flow, h, hops_[h].multiplicity});
  }
  seed_flows_.push_back(flow);
}

void FlowNetwork::deactivate(uint32_t flow) {
  if (!active_[flow]) internal_error("deactivate: flow not active");
  active_[flow] = 0;
  rate_[flow] = 0.0;
  for (uint32_t h = hop_begin_[flow]; h < hop_begin_[flow + 1]; ++h) {
    const uint32_t link = hops_[h].link;
    std::vector<Slot>& slots = link_flows_[link];
    // Swap-remove; the entry moved into the hole learns its new slot.
    const uint32_t slot = hops_[h].slot;
    slots[slot] = slots.back();
    hops_[slots[slot].hop].slot = slot;
    slots.pop_back();
    seed_links_.push_back(link);
  }
}

void FlowNetwork::collect_component() {
  if (++epoch_ == 0) {  // wrapped: forget every old mark
    std::fill(flow_mark_.begin(), flow_mark_.end(), 0);
    std::fill(link_mark_.begin(), link_mark_.end(), 0);
    std::fill(flow_frozen_.begin(), flow_frozen_.end(), 0);
    epoch_ = 1;
  }
  comp_flows_.clear();
  comp_links_.clear();
  for (const uint32_t flow : seed_flows_) {
    if (active_[flow] && flow_mark_[flow] != epoch_) {
      flow_mark_[flow] = epoch_;
      comp_flows_.push_back(flow);
    }
  }
  for (const uint32_t link : seed_links_) {
    if (link_mark_[link] != epoch_) {
      link_mark_[link] = epoch_;
      comp_links_.push_back(link);
    }
  }
  seed_flows_.clear();
  seed_links_.clear();
  // Breadth-first over the incidence graph: a link brings in all flows on it,
  // a flow brings in all links on its path.
  size_t next_flow = 0;
  size_t next_link = 0;
  while (next_flow < comp_flows_.size() || next_link < comp_links_.size()) {
    for (; next_link < comp_links_.size(); ++next_link) {
      for (const Slot& slot : link_flows_[comp_links_[next_link]]) {
        if (flow_mark_[slot.flow] != epoch_) {
          flow_mark_[slot.flow] = epoch_;
          comp_flows_.push_back(slot.flow);
        }
      }
    }
    for (; next_flow < comp_flows_.size(); ++next_flow) {
      const uint32_t flow = comp_flows_[next_flow];
      for (uint32_t h = hop_begin_[flow]; h < hop_begin_[flow + 1]; ++h) {
        const uint32_t link = hops_[h].link;
        if (link_mark_[link] != epoch_) {
          link_mark_[link] = epoch_;
          comp_links_.push_back(link);
        }
      }
    }
  }
}

void FlowNetwork::next_round() {
  if (++round_ == 0) {
    std::fill(link_touched_.begin(), link_touched_.end(), 0);
    round_ = 1;
  }
  touched_.clear();
}

void FlowNetwork::freeze(uint32_t flow, double rate) {
  flow_frozen_[flow] = epoch_;
  --unfrozen_;
  const double old = rate_[flow];
  if (std::abs(rate - old) > kRateRel * old) {
    changes_.push_back(RateChange{flow, old});
    rate_[flow] = rate;
  }
  for (uint32_t h = hop_begin_[flow]; h < hop_begin_[flow + 1]; ++h) {
    const Hop& hop = hops_[h];
    // Other flows on the link fill from what this one leaves (at its final rate).
    residual_[hop.link] -= static_cast<double>(hop.multiplicity) * rate_[flow];
    weight_[hop.link] -= hop.multiplicity;
    if (link_touched_[hop.link] != round_) {
      link_touched_[hop.link] = round_;
      touched_.push_back(hop.link);
    }
  }
}

std::span<const FlowNetwork::RateChange> FlowNetwork::solve() {
  changes_.clear();
  if (!dirty()) return changes_;
  collect_component();

  // Progressive filling: every unfrozen flow's rate rises together (the
  // level); a link saturates when level * (its unfrozen multiplicity) fills
  // its residual capacity, and a capped flow stops at its cap. The lowest such
  // point freezes its flows, which lowers other links' residuals and weights.
  // A link's fair share residual / weight can only rise as flows freeze (they
  // freeze at or below it), so a heap with lazy deletion finds the next one.
  const auto heap_after = [](const ShareEntry& a, const ShareEntry& b) {
    return share_after(a.share, a.link, b.share, b.link);
  };
  heap_.clear();
  for (const uint32_t link : comp_links_) {
    uint64_t weight = 0;
    for (const Slot& slot : link_flows_[link]) weight += slot.multiplicity;
    weight_[link] = weight;
    residual_[link] = capacity_[link];
    ++link_version_[link];
    if (weight > 0) {
      heap_.push_back(
          ShareEntry{capacity_[link] / static_cast<double>(weight), link, link_version_[link]});
    }
  }
  std::make_heap(heap_.begin(), heap_.end(), heap_after);
  capped_.clear();
  for (const uint32_t flow : comp_flows_) {
    if (cap_[flow] > 0.0) capped_.emplace_back(cap_[flow], flow);
  }
  std::sort(capped_.begin(), capped_.end());

  unfrozen_ = comp_flows_.size();
  size_t next_cap = 0;
  double level = 0.0;
  while (unfrozen_ > 0) {
    while (!heap_.empty()) {
      const ShareEntry& top = heap_.front();
      if (top.version == link_version_[top.link] && weight_[top.link] > 0) break;
      std::pop_heap(heap_.begin(), heap_.end(), heap_after);
      heap_.pop_back();
    }
    while (next_cap < capped_.size() && flow_frozen_[capped_[next_cap].second] == epoch_) {
      ++next_cap;
    }
    const double link_share = heap_.empty() ? kInf : heap_.front().share;
    const double cap = next_cap < capped_.size() ? capped_[next_cap].first : kInf;
    if (link_share == kInf && cap == kInf) internal_error("unfrozen flow with no link and no cap");
    next_round();
    if (cap <= link_share) {
      level = std::max(level, cap);
      freeze(capped_[next_cap].second, cap);
      ++next_cap;
    } else {
      const uint32_t link = heap_.front().link;
      std::pop_heap(heap_.begin(), heap_.end(), heap_after);
      heap_.pop_back();
      if (link_share > level * (1.0 + kTieRel)) level = link_share;
      for (const Slot& slot : link_flows_[link]) {
        if (flow_frozen_[slot.flow] != epoch_) freeze(slot.flow, level);
      }
    }
    for (const uint32_t link : touched_) {
      ++link_version_[link];
      if (weight_[link] > 0) {
        const double share = std::max(residual_[link], 0.0) / static_cast<double>(weight_[link]);
        heap_.push_back(ShareEntry{share, link, link_version_[link]});
        std::push_heap(heap_.begin(), heap_.end(), heap_after);
      }
    }
  }
  return changes_;
}

}  // namespace podsim::sim
