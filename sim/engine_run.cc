// Running the engine: the event loop, flow completions as rates change,
// pools and holds, the run fingerprint, and the deadlock report.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "sim/engine.h"
#include "sim/engine_state.h"

namespace podsim::sim {

using engine_detail::kNever;
using engine_detail::kNone;
using engine_detail::precondition_failed;

namespace {

constexpr uint64_t kNoEvent = std::numeric_limits<uint64_t>::max();
constexpr double kPsPerSecond = 1e12;
// A flow whose remaining bytes are within this fraction of its size is done,
// and a completion time is rounded up to the tick only past this fraction:
// rate * time round trips leave ~1e-16 per operation, far below it, so exact
// closed-form finish times (bytes / rate on a tick) are not pushed a tick late.
constexpr double kDoneRel = 1e-12;
// Rebuild the queue without stale flow completions once they outnumber the
// live events (and are many): bounds memory when rates change often.
constexpr size_t kMinStaleToCompact = 4096;

enum EventKind : uint32_t {
  kFinish = 0,        // a delay, join or zero-byte flow ends
  kFlowActivate = 1,  // a flow's latency has elapsed: it joins the sharing
  kFlowDone = 2,      // a flow's last byte arrives (valid if seq matches)
  kWorkDone = 3,      // pool work ends (valid if seq matches)
};
// Work on a pool never slows below this fraction of its full rate.
constexpr double kMinPoolRate = 0.01;

int64_t saturating_add(int64_t a, int64_t b) { return b > kNever - a ? kNever : a + b; }

// splitmix64's finaliser: a cheap bijective 64-bit mix.
uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

const char* kind_name(ActivityKind kind) {
  switch (kind) {
    case ActivityKind::kDelay:
      return "delay";
    case ActivityKind::kFlow:
      return "flow";
    case ActivityKind::kJoin:
      return "join";
  }
  return "?";
}

// Counting sort of the items 0..count-1 by key(i) into `list` (as value(i)),
// the offsets into the records' `begin` member (a sentinel record ends the
// last): each key's items keep their order. Placing them from the last
// backwards at each key's end leaves that end at the key's begin, so no
// second cursor array is needed. The member is still 0 from construction:
// an engine runs once.
template <class Key, class Value>
void index_by_key(size_t count, Key key, Value value, BulkVector<ActivityRecord>& records,
                  uint32_t ActivityRecord::*begin, BulkVector<uint32_t>& list) {
  for (size_t i = 0; i < count; ++i) ++(records[key(i)].*begin);
  uint32_t end = 0;
  for (ActivityRecord& r : records) {
    end += r.*begin;
    r.*begin = end;
  }
  list.resize(count);
  for (size_t i = count; i-- > 0;) list[--(records[key(i)].*begin)] = value(i);
}

}  // namespace

void Engine::State::build_successors() {
  index_by_key(
      edge_from.size(), [this](size_t e) { return edge_from[e]; },
      [this](size_t e) { return edge_to[e]; }, records, &ActivityRecord::succ_begin, succ);
  edge_from = {};
  edge_to = {};
}

void Engine::State::release_build_slack() {
  // Arrays grown by doubling, or reserved from an estimate, hold slack through
  // the run: give its memory back before the run's own arrays are allocated.
  for (auto* v : {&work_pool, &hold_pools}) release_unused_capacity(*v);
  release_unused_capacity(records);
  release_unused_capacity(on_stream);
  release_unused_capacity(flows);
  release_unused_capacity(holds);
  net.release_unused_capacity();
}

void Engine::State::release_run_state() {
  // After the run, queries read only kind, tag, start and finish: free the
  // rest, then keep kind and tag as arrays in place of the records.
  on_stream = {};
  succ = {};
  stream_last = {};
  net = FlowNetwork{};
  flows = {};
  work_pool = {};
  work_seq = {};
  holds = {};
  hold_pools = {};
  from_list = {};
  until_list = {};
  hold_state = {};
  pool_held = {};
  pool_rate = {};
  pool_running = {};
  queue = EventQueue{};
  const size_t n = activity_count();
  kind.resize(n);
  tag.resize(n);
  for (size_t a = 0; a < n; ++a) {
    kind[a] = records[a].kind();
    tag[a] = records[a].tag;
  }
  records = {};
}

void Engine::State::build_holds() {
  // The holds by the activity that begins / ends them.
  const auto hold_index = [](size_t h) { return static_cast<uint32_t>(h); };
  index_by_key(
      holds.size(), [this](size_t h) { return holds[h].from; }, hold_index, records,
      &ActivityRecord::from_begin, from_list);
  index_by_key(
      holds.size(), [this](size_t h) { return holds[h].until; }, hold_index, records,
      &ActivityRecord::until_begin, until_list);
  has_holds = !holds.empty();
  hold_state.assign(holds.size(), 0);
  pool_held.assign(pools, 0.0);
  pool_rate.assign(pools, 1.0);
  pool_running.assign(pools, {});
  work_seq.assign(work_pool.size(), kNoEvent);
}

void Engine::State::schedule_work(const RunningWork& work, uint32_t pool) {
  // Full-rate picoseconds left over the pool's rate, rounded up to a tick
  // only past kDoneRel (as flows are).
  const double ticks = std::ceil(work.left / pool_rate[pool] * (1.0 - kDoneRel));
  const int64_t span = ticks >= 9.2e18 ? kNever : static_cast<int64_t>(std::max(0.0, ticks));
  work_seq[records[work.activity].index] =
      queue.push(Time::from_ps(saturating_add(now, span)), work.activity, kWorkDone);
}

void Engine::State::set_pool_share(uint32_t pool, double delta) {
  pool_held[pool] += delta;
  const double rate = std::max(kMinPoolRate, 1.0 - pool_held[pool]);
  if (rate == pool_rate[pool]) return;
  for (RunningWork& work : pool_running[pool]) {
    work.left -= static_cast<double>(now - work.update) * pool_rate[pool];
    work.left = std::max(0.0, work.left);
    work.update = now;
    ++stale;  // its completion event is superseded
  }
  pool_rate[pool] = rate;
  for (const RunningWork& work : pool_running[pool]) schedule_work(work, pool);
}

void Engine::State::set_hold_share(uint32_t hold, double sign) {
  const HoldRecord& record = holds[hold];
  for (uint32_t i = record.pools_begin; i < record.pools_end; ++i) {
    set_pool_share(hold_pools[i], sign * record.share);
  }
}

void Engine::State::start_activity(uint32_t a) {
  start[a] = now;
  const ActivityRecord& record = records[a];
  switch (record.kind()) {
    case ActivityKind::kDelay:
      if (record.index != kNone) {
        const uint32_t pool = work_pool[record.index];
        pool_running[pool].push_back(RunningWork{a, static_cast<double>(record.param), now});
        schedule_work(pool_running[pool].back(), pool);
      } else {
        queue.push(Time::from_ps(saturating_add(now, record.param)), a, kFinish);
      }
      break;
    case ActivityKind::kJoin:
      queue.push(Time::from_ps(now), a, kFinish);
      break;
    case ActivityKind::kFlow: {
      const Time at = Time::from_ps(saturating_add(now, record.param));
      queue.push(at, a, record.moves_bytes ? kFlowActivate : kFinish);
      break;
    }
  }
  if (!has_holds) return;
  for (uint32_t i = record.from_begin; i < records[a + 1].from_begin; ++i) {
    const uint32_t h = from_list[i];
    if (hold_state[h] != 0) continue;  // its `until` already finished
    hold_state[h] = 1;
    set_hold_share(h, 1.0);
  }
}

void Engine::State::finish_activity(uint32_t a, RunResult& result) {
  finish[a] = now;
  if (result.end.ps() < now) result.end = Time::from_ps(now);
  if (has_holds) {
    // Holds end before successors start: they see the freed pool.
    for (uint32_t i = records[a].until_begin; i < records[a + 1].until_begin; ++i) {
      const uint32_t h = until_list[i];
      if (hold_state[h] == 1) set_hold_share(h, -1.0);
      hold_state[h] = 2;
    }
  }
  for (uint32_t e = records[a].succ_begin; e < records[a + 1].succ_begin; ++e) {
    const uint32_t next = succ[e];
    if (--records[next].pending == 0) start_activity(next);
  }
}

void Engine::State::apply_rates(std::span<const FlowNetwork::RateChange> changes) {
  for (const FlowNetwork::RateChange& change : changes) {
    FlowRecord& flow = flows[change.flow];
    const double rate = net.rate(change.flow);
    // Bytes moved at the old rate since the last change; then a fresh
    // completion event at the new rate (the old one, if any, goes stale).
    const auto elapsed_ps = static_cast<double>(now - flow.last_update);
    flow.remaining -= change.old_rate * elapsed_ps / kPsPerSecond;
    flow.last_update = now;
    if (flow.done_seq != kNoEvent) ++stale;
    const uint32_t a = flow.activity;
    if (flow.remaining <= kDoneRel * flow.bytes) {
      flow.done_seq = queue.push(Time::from_ps(now), a, kFlowDone);
    } else if (rate > 0.0) {
      const double ticks = std::ceil(flow.remaining * kPsPerSecond / rate * (1.0 - kDoneRel));
      const int64_t span = ticks >= 9.2e18 ? kNever : static_cast<int64_t>(ticks);
      flow.done_seq = queue.push(Time::from_ps(saturating_add(now, span)), a, kFlowDone);
    } else {
      flow.done_seq = kNoEvent;  // cannot happen with capacities > 0; reported as deadlock
    }
  }
  if (stale >= kMinStaleToCompact && stale > queue.size() / 2) compact_queue();
}

void Engine::State::compact_queue() {
  queue.retain_if([this](const Event& event) {
    if (event.kind == kWorkDone) return work_seq[records[event.target].index] == event.seq;
    if (event.kind != kFlowDone) return true;
    return flows[records[event.target].index].done_seq == event.seq;
  });
  stale = 0;
}

RunResult Engine::run() {
  State& s = State::of(state_);
  s.check_not_ran("run");
  s.ran = true;
  RunResult result;
  result.end = Time::zero();
  const size_t n = s.activity_count();
  s.release_build_slack();
  s.build_successors();
  s.start.assign(n, kNever);
  s.finish.assign(n, kNever);
  for (FlowRecord& flow : s.flows) flow.done_seq = kNoEvent;
  if (s.pools > 0) s.build_holds();

  s.now = 0;
  for (uint32_t a = 0; a < n; ++a) {
    if (s.records[a].pending == 0) s.start_activity(a);
  }
  uint64_t hash = 0x9e3779b97f4a7c15ULL;
  uint64_t events = 0;
  for (;;) {
    // All events of one timestamp first, then one rate solve for all the
    // flows that joined or left at it (which may add events at the same time).
    if (s.net.dirty() && (s.queue.empty() || s.queue.top().time_ps > s.now)) {
      s.apply_rates(s.net.solve());
      continue;
    }
    if (s.queue.empty()) break;
    const Event event = s.queue.pop();
    const uint32_t a = event.target;
    if (event.kind == kFlowDone) {
      FlowRecord& flow = s.flows[s.records[a].index];
      if (flow.done_seq != event.seq) {
        --s.stale;
        continue;
      }
      flow.done_seq = kNoEvent;
    } else if (event.kind == kWorkDone) {
      uint64_t& seq = s.work_seq[s.records[a].index];
      if (seq != event.seq) {
        --s.stale;
        continue;
      }
      seq = kNoEvent;
    }
    if (event.time_ps == kNever) {
      // Saturated: this activity would end past what the clock can hold.
      result.beyond_clock = ActivityId{a};
      result.end = Time::max();
      break;
    }
    s.now = event.time_ps;
    ++events;
    hash = mix64(hash ^ static_cast<uint64_t>(event.time_ps));
    hash = mix64(hash ^ ((static_cast<uint64_t>(a) << 2) | event.kind));
    switch (event.kind) {
      case kFinish:
        s.finish_activity(a, result);
        break;
      case kFlowActivate: {
        const uint32_t index = s.records[a].index;
        FlowRecord& flow = s.flows[index];
        flow.remaining = flow.bytes;
        flow.last_update = s.now;
        s.net.activate(index);
        break;
      }
      case kFlowDone: {
        const uint32_t index = s.records[a].index;
        s.flows[index].remaining = 0.0;
        s.net.deactivate(index);
        s.finish_activity(a, result);
        break;
      }
      case kWorkDone: {
        std::vector<RunningWork>& running = s.pool_running[s.work_pool[s.records[a].index]];
        running.erase(std::find_if(running.begin(), running.end(),
                                   [a](const RunningWork& w) { return w.activity == a; }));
        s.finish_activity(a, result);
        break;
      }
      default:
        break;
    }
  }
  result.events = events;
  result.fingerprint = hash;
  if (!result.beyond_clock) {  // past the clock, the rest is late, not stuck
    for (uint32_t a = 0; a < n; ++a) {
      if (s.finish[a] == kNever) result.deadlocked.push_back(ActivityId{a});
    }
    if (!result.deadlocked.empty()) s.report_deadlock(result);
  }
  s.release_run_state();
  return result;
}

std::string Engine::State::describe(uint32_t a) const {
  std::string text;
  // The last name set wins; names is small next to the activities.
  for (auto it = names.rbegin(); it != names.rend(); ++it) {
    if (it->first == a) {
      text = "'" + it->second + "' ";
      break;
    }
  }
  text += "(";
  text += kind_name(kind_of(a));
  text += " #" + std::to_string(a);
  if (tag_of(a) != 0) text += ", tag " + std::to_string(tag_of(a));
  const auto on = std::lower_bound(on_stream.begin(), on_stream.end(), std::pair{a, 0u});
  if (on != on_stream.end() && on->first == a) text += ", stream " + std::to_string(on->second);
  text += ")";
  return text;
}

void Engine::State::report_deadlock(RunResult& result) const {
  constexpr size_t kMaxListed = 50;
  constexpr size_t kMaxWaits = 8;
  const size_t listed = std::min(result.deadlocked.size(), kMaxListed);
  std::vector<uint32_t> slot(activity_count(), kNone);  // activity -> line in the report
  for (size_t i = 0; i < listed; ++i) slot[result.deadlocked[i].index] = static_cast<uint32_t>(i);
  // Unfinished predecessors of the listed activities, from the successor CSR.
  std::vector<std::vector<uint32_t>> waits(listed);
  for (uint32_t from = 0; from < activity_count(); ++from) {
    if (finish[from] != kNever) continue;
    for (uint32_t e = records[from].succ_begin; e < records[from + 1].succ_begin; ++e) {
      const uint32_t line = slot[succ[e]];
      if (line != kNone) waits[line].push_back(from);
    }
  }
  std::string& out = result.deadlock_report;
  out = std::to_string(result.deadlocked.size()) +
        " activities never finished (the event queue emptied: a dependency cycle, or a "
        "wait on one):\n";
  for (size_t i = 0; i < listed; ++i) {
    const uint32_t a = result.deadlocked[i].index;
    out += "  " + describe(a);
    if (kind_of(a) == ActivityKind::kFlow && start[a] != kNever) {
      out += " started but never finished";  // a flow left with no rate
    } else if (!waits[i].empty()) {
      std::vector<uint32_t>& w = waits[i];
      std::sort(w.begin(), w.end());
      w.erase(std::unique(w.begin(), w.end()), w.end());
      out += " waits on ";
      for (size_t k = 0; k < w.size() && k < kMaxWaits; ++k) {
        if (k > 0) out += ", ";
        out += describe(w[k]);
      }
      if (w.size() > kMaxWaits) out += ", ... (" + std::to_string(w.size()) + " in all)";
    }
    out += "\n";
  }
  if (result.deadlocked.size() > listed) {
    out += "  ... and " + std::to_string(result.deadlocked.size() - listed) + " more\n";
  }
}

}  // namespace podsim::sim
