#pragma once

// Inside the engine (internal to sim/): its state, as arrays and as the
// records the event loop reads together.
// engine.cc builds the activity DAG and answers queries about it;
// engine_run.cc runs it (the event loop, bandwidth sharing, pools, the
// deadlock report).

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "sim/bulk_allocator.h"
#include "sim/engine.h"
#include "sim/event_queue.h"
#include "sim/flow_network.h"

namespace podsim::sim {
namespace engine_detail {

inline constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();
inline constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

[[noreturn]] inline void precondition_failed(const std::string& what) {
  std::fprintf(stderr, "podsim::sim::Engine: precondition violated: %s\n", what.c_str());
  std::abort();
}

}  // namespace engine_detail

/// An activity as the event loop reads it, in one 32-byte record: the loop
/// visits activities in time order, which jumps between ranks, so this is
/// one cache miss per activity instead of one per array.
struct ActivityRecord {
  static constexpr uint32_t kMaxPending = (1u << 29) - 1;

  int64_t param = 0;  // delay: duration ps; flow: latency ps; join: 0
  uint32_t tag = 0;
  uint32_t index = 0;  // pool work: its work index; flow: its flow index; else kNone
  // From run() on, CSR offsets (the next record's is the end): successors
  // in succ, holds it begins in from_list, holds it ends in until_list.
  uint32_t succ_begin = 0;
  uint32_t from_begin = 0;
  uint32_t until_begin = 0;
  uint32_t pending : 29 = 0;  // unfinished dependencies (stream order included)
  uint32_t kind_bits : 2 = 0;
  uint32_t moves_bytes : 1 = 0;  // a flow with bytes > 0

  ActivityKind kind() const { return static_cast<ActivityKind>(kind_bits); }
};
static_assert(sizeof(ActivityRecord) == 32);

/// A flow's bytes and, during the run, its progress.
struct FlowRecord {
  double bytes = 0;
  double remaining = 0;  // bytes left at last_update
  int64_t last_update = 0;
  uint64_t done_seq = 0;  // seq of the flow's live completion event
  uint32_t activity = 0;
};

/// A pool work running on its pool: its full-rate ps left at `update`.
struct RunningWork {
  uint32_t activity = 0;
  double left = 0;
  int64_t update = 0;
};

/// A hold as added: from `from`'s start to `until`'s finish it takes `share`
/// of the pools hold_pools[pools_begin .. pools_end).
struct HoldRecord {
  double share = 0;
  uint32_t from = 0;
  uint32_t until = 0;
  uint32_t pools_begin = 0;
  uint32_t pools_end = 0;
};

struct Engine::State {
  // Activities (~48 bytes each plus 4 per dependency), then a sentinel
  // record that ends the last one's CSR ranges. run() leaves their kind and
  // tag in arrays for the queries and frees the records.
  BulkVector<ActivityRecord> records = BulkVector<ActivityRecord>(1);
  BulkVector<ActivityKind> kind;
  BulkVector<uint32_t> tag;
  // (activity, stream) of the activities on a stream, ascending: only the
  // deadlock report reads them (a step's tasks use no streams).
  BulkVector<std::pair<uint32_t, uint32_t>> on_stream;
  // Start and finish times, sized at run(); what outlives the run with kind
  // and tag, for the queries.
  BulkVector<int64_t> start, finish;
  // Dependencies: an edge list while building, successor CSR from run() on.
  BulkVector<uint32_t> edge_from;
  BulkVector<uint32_t> edge_to;
  BulkVector<uint32_t> succ;
  // Streams: the last activity added to each (its successor waits for it).
  std::vector<uint32_t> stream_last;
  std::vector<std::pair<uint32_t, std::string>> names;
  // Flows, indexed by flow (FlowNetwork's index).
  FlowNetwork net;
  BulkVector<FlowRecord> flows;
  // Pools: by pool work, its pool and (run-time) the seq of its live
  // completion event; and the holds.
  BulkVector<uint32_t> work_pool;
  BulkVector<uint64_t> work_seq;
  uint32_t pools = 0;
  uint32_t links = 0;  // net's, kept for link_count() once run() has released net
  // Holds as added; build_holds indexes them by from / until.
  BulkVector<HoldRecord> holds;
  BulkVector<uint32_t> hold_pools;
  bool has_holds = false;
  // Run-time: holds by the activity that begins / ends them (lists of the
  // records' CSR), hold state (0 waiting, 1 held, 2 over), each pool's held
  // share, rate and running works.
  BulkVector<uint32_t> from_list, until_list;
  BulkVector<uint8_t> hold_state;
  std::vector<double> pool_held, pool_rate;
  std::vector<std::vector<RunningWork>> pool_running;
  // The run.
  EventQueue queue;
  int64_t now = 0;
  size_t stale = 0;
  bool ran = false;

  // The state of an engine that has not been moved from.
  static State& of(const std::unique_ptr<State>& state) {
    if (!state) [[unlikely]]
      engine_detail::precondition_failed("use of a moved-from Engine");
    return *state;
  }

  uint32_t add_activity(ActivityKind k, int64_t p, StreamId s, uint32_t t);
  void add_pending(uint32_t a);
  size_t activity_count() const { return records.empty() ? kind.size() : records.size() - 1; }
  ActivityKind kind_of(uint32_t a) const { return records.empty() ? kind[a] : records[a].kind(); }
  uint32_t tag_of(uint32_t a) const { return records.empty() ? tag[a] : records[a].tag; }
  void check_activity(ActivityId id, const char* where) const;
  void check_not_ran(const char* where) const;
  void release_build_slack();
  void build_successors();
  void release_run_state();
  void start_activity(uint32_t a);
  void finish_activity(uint32_t a, RunResult& result);
  void apply_rates(std::span<const FlowNetwork::RateChange> changes);
  void build_holds();
  void schedule_work(const RunningWork& work, uint32_t pool);
  void set_pool_share(uint32_t pool, double delta);
  void set_hold_share(uint32_t hold, double sign);
  void compact_queue();
  std::string describe(uint32_t a) const;
  void report_deadlock(RunResult& result) const;
};

}  // namespace podsim::sim
