#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "sim/time.h"

namespace podsim::sim {

/// Handles are plain indices into the engine that made them.
struct LinkId {
  uint32_t index = 0;
  auto operator<=>(const LinkId&) const = default;
};
struct StreamId {
  uint32_t index = 0;
  auto operator<=>(const StreamId&) const = default;
};
struct ActivityId {
  uint32_t index = 0;
  auto operator<=>(const ActivityId&) const = default;
};
struct PoolId {
  uint32_t index = 0;
  auto operator<=>(const PoolId&) const = default;
};

/// "No stream": the activity starts as soon as its dependencies are done.
inline constexpr StreamId kNoStream{UINT32_MAX};

/// One link a flow crosses. `multiplicity` says how many identical flows this
/// one stands for on that link (symmetric images simulated once): the link
/// carries multiplicity x rate. A plain flow has multiplicity 1 everywhere.
struct PathHop {
  LinkId link;
  uint32_t multiplicity = 1;
};

enum class ActivityKind : uint8_t { kDelay, kFlow, kJoin };

/// What one run did.
struct RunResult {
  Time end;                  ///< finish time of the last activity
  uint64_t events = 0;       ///< events processed
  uint64_t fingerprint = 0;  ///< hash over the order and times of events
  /// Activities that never ran because the queue emptied first (a cycle, or a
  /// wait on something never scheduled). Empty when the run completed.
  std::vector<ActivityId> deadlocked;
  /// Human-readable list of the deadlocked activities (names where set).
  std::string deadlock_report;
  /// The first activity that would finish at or past the end of the clock
  /// (Time::max(), ~106 days): the run stops there, with every earlier event
  /// processed; `end` is then Time::max() and `deadlocked` stays empty.
  std::optional<ActivityId> beyond_clock;
  bool completed() const { return deadlocked.empty() && !beyond_clock; }
};

/// A discrete-event engine over a DAG of activities.
///
/// - A delay takes a fixed time. A flow first waits its latency, then moves
///   its bytes at a rate that all concurrent flows share max-min fairly over
///   the capacities of the links they cross (SimGrid's fluid model); rates
///   are recomputed, for the affected flows only, whenever a flow starts or
///   ends. A join takes no time: it finishes when its dependencies have.
/// - A stream is an in-order queue (CUDA-stream semantics): activities on it
///   run one at a time in the order they were added, each also waiting for
///   its own dependencies.
/// - A pool is a processor that work shares with holds (a GPU's SMs, part of
///   which a communication kernel occupies): work on a pool progresses at
///   1 - (the shares held while it runs) of its full rate, recomputed whenever
///   a hold begins or ends. A plain delay is work that nothing holds from.
/// - Events are ordered by (time, insertion sequence), so the same input gives
///   the same run, and `RunResult::fingerprint` with it.
///
/// The engine is a value: build, run once, then read times. Not thread-safe;
/// separate engines may run on separate threads.
class Engine {
 public:
  Engine();
  ~Engine();
  Engine(Engine&&) noexcept;
  Engine& operator=(Engine&&) noexcept;
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  /// A link of the flow network with a capacity in bytes per second (one
  /// direction; model a full-duplex cable as two links). Must be > 0.
  LinkId add_link(double capacity_bytes_per_s);
  /// An in-order stream.
  StreamId add_stream();

  /// Work of a fixed duration, on `stream` if given.
  ActivityId add_delay(Time duration, StreamId stream = kNoStream, uint32_t tag = 0);
  /// A pool of processing that holds can take a share of.
  PoolId add_pool();
  /// Work that takes `duration` with all of `pool`; while holds take a
  /// share h of the pool it progresses at 1 - h. A delay otherwise.
  ActivityId add_pool_work(Time duration, PoolId pool, StreamId stream = kNoStream,
                           uint32_t tag = 0);
  /// `share` of `pool` is held from when `from` starts until `until`
  /// finishes (nothing if `until` finishes first). Shares of concurrent
  /// holds add up; work keeps at least 1/100 of the pool. share in [0, 1].
  void add_hold(ActivityId from, ActivityId until, PoolId pool, double share);
  /// The same hold on each of `pools` (the GPUs of one collective): stored
  /// once, with the pools listed, and applied to them in that order.
  void add_hold(ActivityId from, ActivityId until, std::span<const PoolId> pools, double share);
  /// A transfer of `bytes` over `path` (links in order). `latency` elapses
  /// before any byte moves. `max_rate_bytes_per_s` caps the flow's own rate
  /// (0: no cap). An empty path with no cap is rejected; bytes == 0 makes the
  /// flow last exactly its latency.
  ActivityId add_flow(double bytes, std::span<const PathHop> path, Time latency,
                      StreamId stream = kNoStream, uint32_t tag = 0,
                      double max_rate_bytes_per_s = 0.0);
  /// A zero-time activity that finishes once all its dependencies have.
  ActivityId add_join(uint32_t tag = 0);

  /// `after` may start only once `before` has finished.
  void add_dependency(ActivityId before, ActivityId after);
  /// Optional name shown in deadlock reports.
  void set_name(ActivityId activity, std::string name);

  /// Optional: pre-sizes storage for this many activities and dependencies
  /// (a hint; building works without it).
  void reserve(size_t activities, size_t dependencies);

  /// Runs every activity to completion (or until the queue empties). Call once.
  RunResult run();

  /// Times of an activity after run(); Time::max() if it never started/finished.
  Time start_time(ActivityId activity) const;
  Time finish_time(ActivityId activity) const;
  ActivityKind kind(ActivityId activity) const;
  uint32_t tag(ActivityId activity) const;
  size_t activity_count() const;
  size_t link_count() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace podsim::sim
