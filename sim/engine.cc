#include "sim/engine.h"

#include <string>
#include <utility>

#include "sim/engine_state.h"

namespace podsim::sim {

using engine_detail::kNever;
using engine_detail::kNone;
using engine_detail::precondition_failed;

void Engine::State::check_activity(ActivityId id, const char* where) const {
  if (id.index >= activity_count()) [[unlikely]] {
    precondition_failed(std::string(where) + ": unknown activity id " + std::to_string(id.index) +
                        " (this engine has " + std::to_string(activity_count()) + " activities)");
  }
}

void Engine::State::check_not_ran(const char* where) const {
  if (ran) [[unlikely]] {
    precondition_failed(std::string(where) + " after run(): an engine runs once; build a new one");
  }
}

uint32_t Engine::State::add_activity(ActivityKind k, int64_t p, StreamId s, uint32_t t) {
  check_not_ran("adding an activity");
  if (s != kNoStream && s.index >= stream_last.size()) [[unlikely]] {
    precondition_failed("unknown stream id " + std::to_string(s.index) + " (this engine has " +
                        std::to_string(stream_last.size()) + " streams)");
  }
  if (activity_count() >= kNone - 1) [[unlikely]]
    precondition_failed("more than 2^32-2 activities");
  const auto a = static_cast<uint32_t>(activity_count());
  // The new activity takes the sentinel's place; a new sentinel follows.
  ActivityRecord& record = records.back();
  record.param = p;
  record.tag = t;
  record.index = kNone;
  record.kind_bits = static_cast<uint32_t>(k) & 3u;
  records.emplace_back();
  if (s != kNoStream) {
    on_stream.emplace_back(a, s.index);
    // In-order stream: an implicit dependency on the previous activity there.
    const uint32_t previous = stream_last[s.index];
    if (previous != kNone) {
      edge_from.push_back(previous);
      edge_to.push_back(a);
      add_pending(a);
    }
    stream_last[s.index] = a;
  }
  return a;
}

void Engine::State::add_pending(uint32_t a) {
  ActivityRecord& record = records[a];
  if (record.pending == ActivityRecord::kMaxPending) [[unlikely]] {
    precondition_failed("activity " + std::to_string(a) + " has more than " +
                        std::to_string(ActivityRecord::kMaxPending) + " dependencies");
  }
  ++record.pending;
}

Engine::Engine() : state_(std::make_unique<State>()) {}
Engine::~Engine() = default;
Engine::Engine(Engine&&) noexcept = default;
Engine& Engine::operator=(Engine&&) noexcept = default;

LinkId Engine::add_link(double capacity_bytes_per_s) {
  const State& s = State::of(state_);
  s.check_not_ran("add_link");
  if (!(capacity_bytes_per_s > 0.0) || !std::isfinite(capacity_bytes_per_s)) [[unlikely]] {
    precondition_failed("add_link: capacity must be finite and > 0 bytes/s, got " +
                        std::to_string(capacity_bytes_per_s));
  }
  ++state_->links;
  return LinkId{state_->net.add_link(capacity_bytes_per_s)};
}

StreamId Engine::add_stream() {
  State& s = State::of(state_);
  s.check_not_ran("add_stream");
  s.stream_last.push_back(kNone);
  return StreamId{static_cast<uint32_t>(s.stream_last.size() - 1)};
}

ActivityId Engine::add_delay(Time duration, StreamId stream, uint32_t tag) {
  if (duration < Time::zero()) [[unlikely]] {
    precondition_failed("add_delay: negative duration " + std::to_string(duration.ps()) + " ps");
  }
  return ActivityId{
      State::of(state_).add_activity(ActivityKind::kDelay, duration.ps(), stream, tag)};
}

PoolId Engine::add_pool() {
  State& s = State::of(state_);
  s.check_not_ran("add_pool");
  return PoolId{s.pools++};
}

ActivityId Engine::add_pool_work(Time duration, PoolId pool, StreamId stream, uint32_t tag) {
  State& s = State::of(state_);
  if (pool.index >= s.pools) [[unlikely]] {
    precondition_failed("add_pool_work: unknown pool id " + std::to_string(pool.index));
  }
  const ActivityId a = add_delay(duration, stream, tag);
  s.records[a.index].index = static_cast<uint32_t>(s.work_pool.size());
  s.work_pool.push_back(pool.index);
  return a;
}

void Engine::add_hold(ActivityId from, ActivityId until, PoolId pool, double share) {
  add_hold(from, until, std::span<const PoolId>(&pool, 1), share);
}

void Engine::add_hold(ActivityId from, ActivityId until, std::span<const PoolId> pools,
                      double share) {
  State& s = State::of(state_);
  s.check_not_ran("add_hold");
  s.check_activity(from, "add_hold (from)");
  s.check_activity(until, "add_hold (until)");
  for (const PoolId pool : pools) {
    if (pool.index >= s.pools || !(share >= 0.0 && share <= 1.0)) [[unlikely]] {
      precondition_failed("add_hold: unknown pool " + std::to_string(pool.index) +
                          " or share outside [0, 1]: " + std::to_string(share));
    }
  }
  if (pools.empty()) return;
  if (s.hold_pools.size() + pools.size() >= kNone) [[unlikely]]
    precondition_failed("add_hold: more than 2^32-1 held pools");
  const auto pools_begin = static_cast<uint32_t>(s.hold_pools.size());
  for (const PoolId pool : pools) s.hold_pools.push_back(pool.index);
  s.holds.push_back(HoldRecord{share, from.index, until.index, pools_begin,
                               static_cast<uint32_t>(s.hold_pools.size())});
}

ActivityId Engine::add_flow(double bytes, std::span<const PathHop> path, Time latency,
                            StreamId stream, uint32_t tag, double max_rate_bytes_per_s) {
  State& s = State::of(state_);
  if (!(bytes >= 0.0) || !std::isfinite(bytes)) [[unlikely]] {
    precondition_failed("add_flow: bytes must be finite and >= 0, got " + std::to_string(bytes));
  }
  if (latency < Time::zero()) [[unlikely]] {
    precondition_failed("add_flow: negative latency " + std::to_string(latency.ps()) + " ps");
  }
  if (!(max_rate_bytes_per_s >= 0.0)) [[unlikely]] {
    precondition_failed("add_flow: max_rate_bytes_per_s must be >= 0 (0: no cap), got " +
                        std::to_string(max_rate_bytes_per_s));
  }
  const double cap = std::isfinite(max_rate_bytes_per_s) ? max_rate_bytes_per_s : 0.0;
  if (path.empty() && cap == 0.0) [[unlikely]] {
    precondition_failed("add_flow: a flow needs a path or a rate cap (both are empty)");
  }
  for (const PathHop& hop : path) {
    if (hop.link.index >= s.net.link_count() || hop.multiplicity == 0) [[unlikely]] {
      precondition_failed("add_flow: bad hop (link " + std::to_string(hop.link.index) +
                          ", multiplicity " + std::to_string(hop.multiplicity) +
                          "); this engine has " + std::to_string(s.net.link_count()) +
                          " links and multiplicity must be >= 1");
    }
  }
  const uint32_t flow = s.net.add_flow(path, cap);
  const uint32_t a = s.add_activity(ActivityKind::kFlow, latency.ps(), stream, tag);
  s.records[a].index = flow;
  s.records[a].moves_bytes = bytes > 0.0 ? 1 : 0;
  s.flows.push_back(FlowRecord{.bytes = bytes, .activity = a});
  return ActivityId{a};
}

ActivityId Engine::add_join(uint32_t tag) {
  return ActivityId{State::of(state_).add_activity(ActivityKind::kJoin, 0, kNoStream, tag)};
}

void Engine::add_dependency(ActivityId before, ActivityId after) {
  State& s = State::of(state_);
  s.check_not_ran("add_dependency");
  s.check_activity(before, "add_dependency (before)");
  s.check_activity(after, "add_dependency (after)");
  if (s.edge_from.size() >= kNone - 1) [[unlikely]] {
    precondition_failed("add_dependency: more than 2^32-2 dependencies");
  }
  s.edge_from.push_back(before.index);
  s.edge_to.push_back(after.index);
  s.add_pending(after.index);
}

void Engine::set_name(ActivityId activity, std::string name) {
  State& s = State::of(state_);
  s.check_activity(activity, "set_name");
  s.names.emplace_back(activity.index, std::move(name));
}

void Engine::reserve(size_t activities, size_t dependencies) {
  State& s = State::of(state_);
  s.records.reserve(activities + 1);  // and the sentinel
  // Flows, pool works and holds are at most about one per activity: their
  // arrays then fill without copies as they grow. Pages never written are
  // never faulted in, and run() gives back what the estimate left over.
  s.flows.reserve(activities);
  s.net.reserve_flows(activities);
  s.work_pool.reserve(activities);
  s.holds.reserve(activities);
  s.hold_pools.reserve(activities);
  s.edge_from.reserve(dependencies);
  s.edge_to.reserve(dependencies);
}

Time Engine::start_time(ActivityId activity) const {
  const State& s = State::of(state_);
  s.check_activity(activity, "start_time");
  if (s.finish.empty()) return Time::max();  // before run()
  const uint32_t a = activity.index;
  // A join starts as it finishes; anything else that never started reads as
  // Time::max().
  if (s.kind_of(a) == ActivityKind::kJoin) return Time::from_ps(s.finish[a]);
  return Time::from_ps(s.start[a]);
}

Time Engine::finish_time(ActivityId activity) const {
  const State& s = State::of(state_);
  s.check_activity(activity, "finish_time");
  return s.finish.empty() ? Time::max() : Time::from_ps(s.finish[activity.index]);
}

ActivityKind Engine::kind(ActivityId activity) const {
  const State& s = State::of(state_);
  s.check_activity(activity, "kind");
  return s.kind_of(activity.index);
}

uint32_t Engine::tag(ActivityId activity) const {
  const State& s = State::of(state_);
  s.check_activity(activity, "tag");
  return s.tag_of(activity.index);
}

size_t Engine::activity_count() const { return State::of(state_).activity_count(); }
size_t Engine::link_count() const { return State::of(state_).links; }

}  // namespace podsim::sim
