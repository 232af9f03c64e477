#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "sim/engine.h"

namespace podsim::sim {

/// The fluid flow network behind Engine: links with capacities, flows with
/// paths, and the max-min fair (progressive filling) rate solver.
///
/// Flows are declared once (add_flow), join the sharing with activate() and
/// leave it with deactivate(). solve() then recomputes the rates of the flows
/// in the connected components (over link <-> flow incidence) touched by those
/// changes since the previous solve, and only those, and says whose rate moved.
/// Indices are plain uint32_t; the engine validates its callers' input, this
/// class only checks what it needs to stay memory-safe.
class FlowNetwork {
 public:
  /// A flow whose rate changed in the last solve(); rate() has the new one.
  struct RateChange {
    uint32_t flow;
    double old_rate;  ///< bytes/s before the solve (0 for a flow that just joined)
  };

  uint32_t add_link(double capacity_bytes_per_s);
  /// `max_rate_bytes_per_s` == 0: no cap. Returns the flow's index.
  uint32_t add_flow(std::span<const PathHop> path, double max_rate_bytes_per_s);

  /// The flow joins the sharing (its rate is 0 until the next solve()).
  void activate(uint32_t flow);
  /// The flow leaves the sharing; its rate drops to 0.
  void deactivate(uint32_t flow);
  /// True when flows joined or left since the last solve().
  bool dirty() const { return !seed_flows_.empty() || !seed_links_.empty(); }

  /// Recomputes max-min fair rates in the affected components. The returned
  /// span stays valid until the next call.
  std::span<const RateChange> solve();

  double rate(uint32_t flow) const { return rate_[flow]; }
  bool active(uint32_t flow) const { return active_[flow] != 0; }
  double capacity(uint32_t link) const { return capacity_[link]; }
  size_t link_count() const { return capacity_.size(); }
  size_t flow_count() const { return cap_.size(); }

  /// Size of the component the last solve() covered (for benchmarks).
  size_t last_component_flows() const { return comp_flows_.size(); }

 private:
  // One hop of a declared flow; `slot` is its position in the link's active list.
  struct Hop {
    uint32_t link;
    uint32_t multiplicity;
    uint32_t slot;
  };
  // One active flow on a link (the link's incidence list).
  struct Slot {
    uint32_t flow;
    uint32_t hop;  // index into hops_, to fix `slot` when this entry moves
    uint32_t multiplicity;
  };
  // A link's fair share in the progressive-filling heap (lazy deletion).
  struct ShareEntry {
    double share;
    uint32_t link;
    uint32_t version;
  };

  void collect_component();
  void freeze(uint32_t flow, double rate);
  void next_round();

  // Links.
  std::vector<double> capacity_;
  std::vector<std::vector<Slot>> link_flows_;
  // Flows (declared).
  std::vector<Hop> hops_;
  std::vector<uint32_t> hop_begin_{0};  // flow f's hops: [hop_begin_[f], hop_begin_[f + 1])
  std::vector<double> cap_;
  // Flows (state).
  std::vector<double> rate_;
  std::vector<uint8_t> active_;
  // Changes since the last solve.
  std::vector<uint32_t> seed_flows_;
  std::vector<uint32_t> seed_links_;
  // Solver scratch, reused across solves (epoch marks avoid clearing).
  uint32_t epoch_ = 0;
  uint32_t round_ = 0;
  std::vector<uint32_t> flow_mark_;
  std::vector<uint32_t> flow_frozen_;
  std::vector<uint32_t> link_mark_;
  std::vector<uint32_t> link_touched_;
  std::vector<uint32_t> link_version_;
  std::vector<double> residual_;
  std::vector<uint64_t> weight_;
  std::vector<uint32_t> comp_flows_;
  std::vector<uint32_t> comp_links_;
  std::vector<uint32_t> touched_;
  std::vector<ShareEntry> heap_;
  std::vector<std::pair<double, uint32_t>> capped_;
  std::vector<RateChange> changes_;
  size_t unfrozen_ = 0;
};

}  // namespace podsim::sim
