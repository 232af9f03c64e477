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

}  // namespace

void Engine::State::build_successors() {
  // Counting sort of the edges by source: successors keep insertion order.
  const size_t n = kind.size();
  succ_begin.assign(n + 1, 0);
  for (const uint32_t from : edge_from) ++succ_begin[from + 1];
  for (size_t i = 0; i < n; ++i) succ_begin[i + 1] += succ_begin[i];
  succ.resize(edge_from.size());
  BulkVector<uint32_t> fill(succ_begin.begin(), succ_begin.end() - 1);
  for (size_t e = 0; e < edge_from.size(); ++e) succ[fill[edge_from[e]]++] = edge_to[e];
  edge_from = {};
  edge_to = {};
}

void Engine::State::release_build_slack() {
  // Arrays grown by doubling, or reserved from an estimate, hold slack through
  // the run: give its memory back before the run's own arrays are allocated.
  for (auto* v : {&tag, &pending, &work_of, &work_pool, &hold_from, &hold_until, &hold_pool_begin,
                  &hold_pools, &flow_activity}) {
    release_unused_capacity(*v);
  }
  release_unused_capacity(kind);
  release_unused_capacity(on_stream);
  release_unused_capacity(param);
  release_unused_capacity(flow_bytes);
  release_unused_capacity(flow_latency);
  release_unused_capacity(hold_share);
  net.release_unused_capacity();
}

void Engine::State::release_run_state() {
  // After the run, queries read only kind, tag, start and finish: free the
  // rest.
  on_stream = {};
  param = {};
  work_of = {};
  pending = {};
  succ_begin = {};
  succ = {};
  stream_last = {};
  net = FlowNetwork{};
  flow_activity = {};
  flow_bytes = {};
  flow_latency = {};
  remaining = {};
  last_update = {};
  done_seq = {};
  work_pool = {};
  hold_pool_begin = {};
  hold_pools = {};
  hold_share = {};
  from_begin = {};
  from_list = {};
  until_begin = {};
  until_list = {};
  hold_state = {};
  pool_held = {};
  pool_rate = {};
  pool_running = {};
  work_left = {};
  work_update = {};
  work_seq = {};
  queue = EventQueue{};
}

void Engine::State::build_holds() {
  // Counting sort of the holds by the activity that begins / ends them.
  const size_t n = kind.size();
  auto index = [n](const BulkVector<uint32_t>& key, BulkVector<uint32_t>& begin,
                   BulkVector<uint32_t>& list) {
    begin.assign(n + 1, 0);
    for (const uint32_t k : key) ++begin[k + 1];
    for (size_t i = 0; i < n; ++i) begin[i + 1] += begin[i];
    list.resize(key.size());
    BulkVector<uint32_t> fill(begin.begin(), begin.end() - 1);
    for (uint32_t h = 0; h < key.size(); ++h) list[fill[key[h]]++] = h;
  };
  index(hold_from, from_begin, from_list);
  index(hold_until, until_begin, until_list);
  has_holds = !hold_from.empty();
  hold_state.assign(hold_from.size(), 0);
  // The run reaches holds through the indexes only.
  hold_from = {};
  hold_until = {};
  pool_held.assign(pools, 0.0);
  pool_rate.assign(pools, 1.0);
  pool_running.assign(pools, {});
  const size_t works = work_pool.size();
  work_left.assign(works, 0.0);
  work_update.assign(works, 0);
  work_seq.assign(works, kNoEvent);
}

void Engine::State::schedule_work(uint32_t a) {
  // Full-rate picoseconds left over the pool's rate, rounded up to a tick
  // only past kDoneRel (as flows are).
  const uint32_t w = work_of[a];
  const double rate = pool_rate[work_pool[w]];
  const double ticks = std::ceil(work_left[w] / rate * (1.0 - kDoneRel));
  const int64_t span = ticks >= 9.2e18 ? kNever : static_cast<int64_t>(std::max(0.0, ticks));
  work_seq[w] = queue.push(Time::from_ps(saturating_add(now, span)), a, kWorkDone);
}

void Engine::State::set_pool_share(uint32_t pool, double delta) {
  pool_held[pool] += delta;
  const double rate = std::max(kMinPoolRate, 1.0 - pool_held[pool]);
  if (rate == pool_rate[pool]) return;
  for (const uint32_t a : pool_running[pool]) {
    const uint32_t w = work_of[a];
    work_left[w] -= static_cast<double>(now - work_update[w]) * pool_rate[pool];
    work_left[w] = std::max(0.0, work_left[w]);
    work_update[w] = now;
    ++stale;  // its completion event is superseded
  }
  pool_rate[pool] = rate;
  for (const uint32_t a : pool_running[pool]) schedule_work(a);
}

void Engine::State::set_hold_share(uint32_t hold, double sign) {
  for (uint32_t i = hold_pool_begin[hold]; i < hold_pool_begin[hold + 1]; ++i) {
    set_pool_share(hold_pools[i], sign * hold_share[hold]);
  }
}

void Engine::State::start_activity(uint32_t a) {
  start[a] = now;
  switch (kind[a]) {
    case ActivityKind::kDelay:
      if (const uint32_t w = work_of[a]; w != kNone) {
        work_left[w] = static_cast<double>(param[a]);
        work_update[w] = now;
        pool_running[work_pool[w]].push_back(a);
        schedule_work(a);
      } else {
        queue.push(Time::from_ps(saturating_add(now, param[a])), a, kFinish);
      }
      break;
    case ActivityKind::kJoin:
      queue.push(Time::from_ps(now), a, kFinish);
      break;
    case ActivityKind::kFlow: {
      const auto flow = static_cast<uint32_t>(param[a]);
      const Time at = Time::from_ps(saturating_add(now, flow_latency[flow]));
      queue.push(at, a, flow_bytes[flow] > 0.0 ? kFlowActivate : kFinish);
      break;
    }
  }
  if (!has_holds) return;
  for (uint32_t i = from_begin[a]; i < from_begin[a + 1]; ++i) {
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
    for (uint32_t i = until_begin[a]; i < until_begin[a + 1]; ++i) {
      const uint32_t h = until_list[i];
      if (hold_state[h] == 1) set_hold_share(h, -1.0);
      hold_state[h] = 2;
    }
  }
  for (uint32_t e = succ_begin[a]; e < succ_begin[a + 1]; ++e) {
    const uint32_t next = succ[e];
    if (--pending[next] == 0) start_activity(next);
  }
}

void Engine::State::apply_rates(std::span<const FlowNetwork::RateChange> changes) {
  for (const FlowNetwork::RateChange& change : changes) {
    const uint32_t flow = change.flow;
    const double rate = net.rate(flow);
    // Bytes moved at the old rate since the last change; then a fresh
    // completion event at the new rate (the old one, if any, goes stale).
    const auto elapsed_ps = static_cast<double>(now - last_update[flow]);
    remaining[flow] -= change.old_rate * elapsed_ps / kPsPerSecond;
    last_update[flow] = now;
    if (done_seq[flow] != kNoEvent) ++stale;
    const uint32_t a = flow_activity[flow];
    if (remaining[flow] <= kDoneRel * flow_bytes[flow]) {
      done_seq[flow] = queue.push(Time::from_ps(now), a, kFlowDone);
    } else if (rate > 0.0) {
      const double ticks = std::ceil(remaining[flow] * kPsPerSecond / rate * (1.0 - kDoneRel));
      const int64_t span = ticks >= 9.2e18 ? kNever : static_cast<int64_t>(ticks);
      done_seq[flow] = queue.push(Time::from_ps(saturating_add(now, span)), a, kFlowDone);
    } else {
      done_seq[flow] = kNoEvent;  // cannot happen with capacities > 0; reported as deadlock
    }
  }
  if (stale >= kMinStaleToCompact && stale > queue.size() / 2) compact_queue();
}

void Engine::State::compact_queue() {
  queue.retain_if([this](const Event& event) {
    if (event.kind == kWorkDone) return work_seq[work_of[event.target]] == event.seq;
    if (event.kind != kFlowDone) return true;
    return done_seq[param[event.target]] == event.seq;
  });
  stale = 0;
}

RunResult Engine::run() {
  State& s = State::of(state_);
  s.check_not_ran("run");
  s.ran = true;
  RunResult result;
  result.end = Time::zero();
  const size_t n = s.kind.size();
  s.release_build_slack();
  s.build_successors();
  s.start.assign(n, kNever);
  s.finish.assign(n, kNever);
  const size_t flows = s.flow_bytes.size();
  s.remaining.assign(flows, 0.0);
  s.last_update.assign(flows, 0);
  s.done_seq.assign(flows, kNoEvent);
  if (s.pools > 0) s.build_holds();

  s.now = 0;
  for (uint32_t a = 0; a < n; ++a) {
    if (s.pending[a] == 0) s.start_activity(a);
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
      const auto flow = static_cast<uint32_t>(s.param[a]);
      if (s.done_seq[flow] != event.seq) {
        --s.stale;
        continue;
      }
      s.done_seq[flow] = kNoEvent;
    } else if (event.kind == kWorkDone) {
      if (s.work_seq[s.work_of[a]] != event.seq) {
        --s.stale;
        continue;
      }
      s.work_seq[s.work_of[a]] = kNoEvent;
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
        const auto flow = static_cast<uint32_t>(s.param[a]);
        s.remaining[flow] = s.flow_bytes[flow];
        s.last_update[flow] = s.now;
        s.net.activate(flow);
        break;
      }
      case kFlowDone: {
        const auto flow = static_cast<uint32_t>(s.param[a]);
        s.remaining[flow] = 0.0;
        s.net.deactivate(flow);
        s.finish_activity(a, result);
        break;
      }
      case kWorkDone: {
        std::vector<uint32_t>& running = s.pool_running[s.work_pool[s.work_of[a]]];
        running.erase(std::find(running.begin(), running.end(), a));
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
  text += kind_name(kind[a]);
  text += " #" + std::to_string(a);
  if (tag[a] != 0) text += ", tag " + std::to_string(tag[a]);
  const auto on = std::lower_bound(on_stream.begin(), on_stream.end(), std::pair{a, 0u});
  if (on != on_stream.end() && on->first == a) text += ", stream " + std::to_string(on->second);
  text += ")";
  return text;
}

void Engine::State::report_deadlock(RunResult& result) const {
  constexpr size_t kMaxListed = 50;
  constexpr size_t kMaxWaits = 8;
  const size_t listed = std::min(result.deadlocked.size(), kMaxListed);
  std::vector<uint32_t> slot(kind.size(), kNone);  // activity -> line in the report
  for (size_t i = 0; i < listed; ++i) slot[result.deadlocked[i].index] = static_cast<uint32_t>(i);
  // Unfinished predecessors of the listed activities, from the successor CSR.
  std::vector<std::vector<uint32_t>> waits(listed);
  for (uint32_t from = 0; from < kind.size(); ++from) {
    if (finish[from] != kNever) continue;
    for (uint32_t e = succ_begin[from]; e < succ_begin[from + 1]; ++e) {
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
    if (kind[a] == ActivityKind::kFlow && start[a] != kNever) {
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
