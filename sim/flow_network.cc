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
// Predictions are checked to this relative precision: a link is saturated
// when less than this fraction of its capacity is left, and a flow frozen
// this close to its old rate kept it. Far above rounding noise (~1e-15), far
// below anything physical.
constexpr double kCheckRel = 1e-10;
constexpr double kInf = std::numeric_limits<double>::infinity();

[[noreturn]] void internal_error(const char* what) {
  std::fprintf(stderr, "podsim::sim::FlowNetwork: internal error: %s\n", what);
  std::abort();
}

}  // namespace

uint32_t FlowNetwork::add_link(double capacity_bytes_per_s) {
  const auto index = static_cast<uint32_t>(capacity_.size());
  capacity_.push_back(capacity_bytes_per_s);
  link_flows_.emplace_back();
  link_mark_.push_back(0);
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
  return index;
}

void FlowNetwork::reserve_flows(size_t flows) {
  hops_.reserve(flows);
  hop_begin_.reserve(flows + 1);
  cap_.reserve(flows);
}

void FlowNetwork::release_unused_capacity() {
  sim::release_unused_capacity(hops_);
  sim::release_unused_capacity(hop_begin_);
  sim::release_unused_capacity(cap_);
}

FlowNetwork::FlowState& FlowNetwork::state_of(uint32_t flow) {
  // The first join sizes the state of every flow declared so far, at once.
  if (flow >= flows_.size()) flows_.resize(cap_.size());
  return flows_[flow];
}

void FlowNetwork::activate(uint32_t flow) {
  FlowState& f = state_of(flow);
  if (f.active) internal_error("activate: flow already active");
  f.active = true;
  f.rate = 0.0;
  for (uint32_t h = hop_begin_[flow]; h < hop_begin_[flow + 1]; ++h) {
    const uint32_t link = hops_[h].link;
    std::vector<Slot>& slots = link_flows_[link];
    hops_[h].slot = static_cast<uint32_t>(slots.size());
    slots.push_back(Slot{flow, h, hops_[h].multiplicity});
    seed_links_.push_back(link);
  }
  seed_flows_.push_back(flow);
}

void FlowNetwork::deactivate(uint32_t flow) {
  if (flow >= flows_.size() || !flows_[flow].active) internal_error("deactivate: flow not active");
  flows_[flow].active = false;
  flows_[flow].rate = 0.0;
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

void FlowNetwork::push_share(uint32_t link) {
  ++link_version_[link];
  if (weight_[link] == 0) return;
  const double residual = residual_[link] > 0.0 ? residual_[link] : 0.0;
  shares_.push_back(
      ShareEntry{residual / static_cast<double>(weight_[link]), link, link_version_[link]});
  std::push_heap(shares_.begin(), shares_.end(), [](const ShareEntry& a, const ShareEntry& b) {
    return a.share > b.share || (a.share == b.share && a.link > b.link);
  });
}

void FlowNetwork::push_stop(double level, uint32_t flow, bool predicted) {
  stops_.push_back(StopEntry{level, flow, predicted ? 1u : 0u});
  std::push_heap(stops_.begin(), stops_.end(), [](const StopEntry& a, const StopEntry& b) {
    if (a.level != b.level) return a.level > b.level;
    if (a.flow != b.flow) return a.flow > b.flow;
    return a.predicted > b.predicted;
  });
}

void FlowNetwork::enter_rising(uint32_t flow) {
  // A flow that just joined: it rises from zero like any unfrozen flow.
  flows_[flow].mark = epoch_;
  fill_.push_back(flow);
  flows_[flow].state = State::kRising;
  ++unfrozen_;
  if (cap_[flow] > 0.0) push_stop(cap_[flow], flow, false);
}

void FlowNetwork::enter_held(uint32_t flow, double level) {
  // A flow met on a link being opened at `level`. Up to `level` it did what
  // it did before (nothing it depends on had changed): if its old rate is
  // below, it is frozen there; otherwise it is still rising, predicted to
  // stop at its old rate.
  FlowState& f = flows_[flow];
  f.mark = epoch_;
  fill_.push_back(flow);
  const double old = f.rate;
  if (old < level * (1.0 - kCheckRel)) {
    f.state = State::kFrozen;
    f.new_rate = old;
    f.new_bottleneck = f.bottleneck;
    return;
  }
  f.state = State::kPredicted;
  ++unfrozen_;
  push_stop(old, flow, true);
  if (cap_[flow] > 0.0) push_stop(cap_[flow], flow, false);
}

void FlowNetwork::open_link(uint32_t link, double level) {
  // From here on the link is filled afresh. Everything on it so far followed
  // the old filling, so its state at `level` follows from its flows' states.
  link_mark_[link] = epoch_;
  links_.push_back(link);
  double residual = capacity_[link];
  uint64_t weight = 0;
  for (const Slot& slot : link_flows_[link]) {
    if (flows_[slot.flow].mark != epoch_) enter_held(slot.flow, level);
    const FlowState& f = flows_[slot.flow];
    if (f.state == State::kFrozen) {
      residual -= static_cast<double>(slot.multiplicity) * f.new_rate;
    } else {
      weight += slot.multiplicity;
    }
  }
  residual_[link] = residual;
  weight_[link] = weight;
  push_share(link);
}

void FlowNetwork::open_links_of(uint32_t flow, double level) {
  // The flow no longer does what it did: the links it crosses can no longer
  // be assumed to fill as before.
  for (uint32_t h = hop_begin_[flow]; h < hop_begin_[flow + 1]; ++h) {
    if (link_mark_[hops_[h].link] != epoch_) open_link(hops_[h].link, level);
  }
}

void FlowNetwork::freeze(uint32_t flow, double rate, uint32_t bottleneck) {
  FlowState& f = flows_[flow];
  f.state = State::kFrozen;
  --unfrozen_;
  f.new_rate = rate;
  f.new_bottleneck = bottleneck;
  for (uint32_t h = hop_begin_[flow]; h < hop_begin_[flow + 1]; ++h) {
    const Hop& hop = hops_[h];
    if (link_mark_[hop.link] != epoch_) continue;  // not open: it fills as before
    // The other flows on the link fill from what this one leaves; the link's
    // heap entry is now a lower bound of its share.
    residual_[hop.link] -= static_cast<double>(hop.multiplicity) * rate;
    weight_[hop.link] -= hop.multiplicity;
    ++link_version_[hop.link];
  }
}

bool FlowNetwork::saturated_link_of(uint32_t flow, double level, uint32_t& link) const {
  // A flow may stop at `level` if one of its links is full there: an open
  // link with no slack left, or its old bottleneck if that link is not open
  // (then it fills exactly as before and is full at the old rate).
  for (uint32_t h = hop_begin_[flow]; h < hop_begin_[flow + 1]; ++h) {
    const uint32_t l = hops_[h].link;
    if (link_mark_[l] != epoch_) continue;
    const double slack = residual_[l] - level * static_cast<double>(weight_[l]);
    if (slack <= kCheckRel * capacity_[l]) {
      link = l;
      return true;
    }
  }
  const uint32_t old = flows_[flow].bottleneck;
  if (old != kByCap && link_mark_[old] != epoch_) {
    link = old;
    return true;
  }
  return false;
}

void FlowNetwork::fill() {
  // Progressive filling: every unfrozen flow's rate rises together (the
  // level); an open link saturates when level * (its unfrozen multiplicity)
  // fills what its frozen flows leave, and freezes its unfrozen flows; a
  // flow also stops at its cap. A link's share residual / weight only rises
  // as flows freeze (at or below it), so a stale heap entry is a lower bound
  // and an up-to-date entry on top is the true minimum.
  //
  // Links that are not open fill as they did before, so their flows are only
  // predicted to stop at their old rates; each prediction is checked when the
  // level reaches it. A predicted flow that freezes lower, or finds none of
  // its links full at its old rate (it keeps rising), opens its links.
  const auto share_after = [](const ShareEntry& a, const ShareEntry& b) {
    return a.share > b.share || (a.share == b.share && a.link > b.link);
  };
  const auto stop_after = [](const StopEntry& a, const StopEntry& b) {
    if (a.level != b.level) return a.level > b.level;
    if (a.flow != b.flow) return a.flow > b.flow;
    return a.predicted > b.predicted;
  };
  double level = 0.0;
  while (unfrozen_ > 0) {
    while (!shares_.empty()) {
      ShareEntry& top = shares_.front();
      if (weight_[top.link] == 0) {  // all its flows are frozen
        std::pop_heap(shares_.begin(), shares_.end(), share_after);
        shares_.pop_back();
      } else if (top.version != link_version_[top.link]) {
        const double residual = residual_[top.link] > 0.0 ? residual_[top.link] : 0.0;
        const ShareEntry fresh{residual / static_cast<double>(weight_[top.link]), top.link,
                               link_version_[top.link]};
        std::pop_heap(shares_.begin(), shares_.end(), share_after);
        shares_.back() = fresh;
        std::push_heap(shares_.begin(), shares_.end(), share_after);
      } else {
        break;
      }
    }
    while (!stops_.empty()) {
      const StopEntry& top = stops_.front();
      const State state = flows_[top.flow].state;
      if (state != State::kFrozen && (!top.predicted || state == State::kPredicted)) break;
      std::pop_heap(stops_.begin(), stops_.end(), stop_after);
      stops_.pop_back();
    }
    const double link_share = shares_.empty() ? kInf : shares_.front().share;
    const double stop = stops_.empty() ? kInf : stops_.front().level;
    if (link_share == kInf && stop == kInf) internal_error("unfrozen flow with nothing to stop it");
    if (stop <= link_share) {
      const StopEntry entry = stops_.front();
      std::pop_heap(stops_.begin(), stops_.end(), stop_after);
      stops_.pop_back();
      level = std::max(level, entry.level);
      uint32_t link = kByCap;
      if (!entry.predicted) {
        freeze(entry.flow, cap_[entry.flow], kByCap);
      } else if (saturated_link_of(entry.flow, level, link)) {
        freeze(entry.flow, flows_[entry.flow].rate, link);  // as predicted: bit-equal
      } else {
        flows_[entry.flow].state = State::kRising;
        open_links_of(entry.flow, level);
      }
      continue;
    }
    const uint32_t link = shares_.front().link;
    std::pop_heap(shares_.begin(), shares_.end(), share_after);
    shares_.pop_back();
    if (link_share > level * (1.0 + kTieRel)) level = link_share;
    for (const Slot& slot : link_flows_[link]) {
      const uint32_t flow = slot.flow;
      const State state = flows_[flow].state;
      if (state == State::kFrozen) continue;
      if (state == State::kPredicted) {
        const double old = flows_[flow].rate;
        if (std::abs(old - level) <= kCheckRel * old) {
          freeze(flow, old, link);  // stopped where predicted
          continue;
        }
        freeze(flow, level, link);  // stopped lower: its other links fill differently
        open_links_of(flow, level);
        continue;
      }
      freeze(flow, level, link);
    }
  }
}

void FlowNetwork::commit() {
  for (const uint32_t flow : fill_) {
    FlowState& f = flows_[flow];
    const double old = f.rate;
    if (std::abs(f.new_rate - old) > kRateRel * old) {
      changes_.push_back(RateChange{flow, old});
      f.rate = f.new_rate;
    }
    f.bottleneck = f.new_bottleneck;
  }
}

std::span<const FlowNetwork::RateChange> FlowNetwork::solve() {
  changes_.clear();
  fill_.clear();
  links_.clear();
  shares_.clear();
  stops_.clear();
  unfrozen_ = 0;
  if (!dirty()) return changes_;
  if (++epoch_ == 0) {  // wrapped: forget every old mark
    for (FlowState& f : flows_) f.mark = 0;
    std::fill(link_mark_.begin(), link_mark_.end(), 0);
    epoch_ = 1;
  }
  // The flows that joined rise from zero; the links flows joined or left are
  // filled afresh from the start.
  for (const uint32_t flow : seed_flows_) {
    if (flows_[flow].active && flows_[flow].mark != epoch_) enter_rising(flow);
  }
  for (const uint32_t link : seed_links_) {
    if (link_mark_[link] != epoch_) open_link(link, 0.0);
  }
  seed_flows_.clear();
  seed_links_.clear();
  fill();
  commit();
  return changes_;
}

}  // namespace podsim::sim
