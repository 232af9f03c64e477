#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "sim/bulk_allocator.h"
#include "sim/engine.h"

namespace podsim::sim {

/// The fluid flow network behind Engine: links with capacities, flows with
/// paths, and the max-min fair (progressive filling) rate solver.
///
/// Flows are declared once (add_flow), join the sharing with activate() and
/// leave it with deactivate(). solve() then brings the rates of all active
/// flows back to the max-min fair allocation, visiting only the links whose
/// filling actually changes and the flows on them (see solve()), and says
/// whose rate moved. Indices are plain uint32_t; the engine validates its
/// callers' input, this class only checks what it needs to stay memory-safe.
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

  /// Room for `flows` flows of one hop each, to be declared.
  void reserve_flows(size_t flows);
  /// Gives back the memory under the flow arrays' slack (before a run).
  void release_unused_capacity();

  /// The flow joins the sharing (its rate is 0 until the next solve()).
  void activate(uint32_t flow);
  /// The flow leaves the sharing; its rate drops to 0.
  void deactivate(uint32_t flow);
  /// True when flows joined or left since the last solve().
  bool dirty() const { return !seed_flows_.empty() || !seed_links_.empty(); }

  /// Recomputes the max-min fair rates after the joins and leaves since the
  /// last call, by a differential progressive filling: the links that flows
  /// joined or left are filled afresh, every other flow is predicted to keep
  /// its rate, and a link joins the filling only when a flow on it departs
  /// from its prediction (it freezes lower, or it passes its old rate because
  /// none of its links is saturated there any more). The result is the same
  /// allocation as a filling of the whole network. The returned span stays
  /// valid until the next call.
  std::span<const RateChange> solve();

  double rate(uint32_t flow) const { return flow < flows_.size() ? flows_[flow].rate : 0.0; }
  bool active(uint32_t flow) const { return flow < flows_.size() && flows_[flow].active; }
  double capacity(uint32_t link) const { return capacity_[link]; }
  size_t link_count() const { return capacity_.size(); }
  size_t flow_count() const { return cap_.size(); }

  /// What the last solve() visited (for tests and benchmarks).
  size_t last_solved_flows() const { return fill_.size(); }
  size_t last_solved_links() const { return links_.size(); }

 private:
  static constexpr uint32_t kByCap = UINT32_MAX;  // "bottleneck": the flow's own cap

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
  // A link's fair share in the filling's heap (lazy: a stale entry is a
  // lower bound, refreshed when it reaches the top).
  struct ShareEntry {
    double share;
    uint32_t link;
    uint32_t version;
  };
  // A level where a flow stops unless a link stops it first: its rate cap,
  // or its predicted (old) rate, to be checked there.
  struct StopEntry {
    double level;
    uint32_t flow;
    uint32_t predicted;  // 1: the old rate, 0: the cap
  };
  enum class State : uint8_t { kRising, kPredicted, kFrozen };
  // A flow's sharing state, one record (the solver reads these together).
  struct FlowState {
    double rate = 0;      // the current allocation
    double new_rate = 0;  // in the filling
    // A link where the active flow is a bottleneck flow (saturated, no flow
    // there faster) or kByCap; and the filling's.
    uint32_t bottleneck = kByCap;
    uint32_t new_bottleneck = kByCap;
    uint32_t mark = 0;  // == epoch_: in this solve's filling
    bool active = false;
    State state = State::kFrozen;
  };

  FlowState& state_of(uint32_t flow);
  void enter_rising(uint32_t flow);
  void enter_held(uint32_t flow, double level);
  void open_link(uint32_t link, double level);
  void open_links_of(uint32_t flow, double level);
  void freeze(uint32_t flow, double rate, uint32_t bottleneck);
  bool saturated_link_of(uint32_t flow, double level, uint32_t& link) const;
  void push_share(uint32_t link);
  void push_stop(double level, uint32_t flow, bool predicted);
  void fill();
  void commit();

  // Links.
  std::vector<double> capacity_;
  std::vector<std::vector<Slot>> link_flows_;
  // Flows (declared).
  BulkVector<Hop> hops_;
  BulkVector<uint32_t> hop_begin_{0};  // flow f's hops: [hop_begin_[f], hop_begin_[f + 1])
  BulkVector<double> cap_;
  // Flows (state), allocated when flows first join the sharing: a network
  // being built holds only its paths and caps.
  BulkVector<FlowState> flows_;
  // Changes since the last solve.
  std::vector<uint32_t> seed_flows_;
  std::vector<uint32_t> seed_links_;

  // Solver scratch, reused across solves; a mark equal to epoch_ means "in
  // this solve", so nothing needs clearing.
  uint32_t epoch_ = 0;
  std::vector<uint32_t> link_mark_;  // open: filled afresh
  std::vector<uint32_t> link_version_;
  std::vector<double> residual_;  // capacity left by the frozen flows
  std::vector<uint64_t> weight_;  // multiplicity of the unfrozen flows
  std::vector<uint32_t> fill_;
  std::vector<uint32_t> links_;
  std::vector<ShareEntry> shares_;
  std::vector<StopEntry> stops_;
  std::vector<RateChange> changes_;
  size_t unfrozen_ = 0;
};

}  // namespace podsim::sim
