// Speed of the discrete-event engine (sim/): the raw event queue, a large DAG
// of delays on streams, and many concurrent flows on a fat tree.
// Run: build/default/podsim_bench --benchmark_filter='Queue|Dag|FatTree'
#include <benchmark/benchmark.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "sim/engine.h"
#include "sim/event_queue.h"

namespace podsim::sim {
namespace {

// A small deterministic generator (xorshift64*): no <random> distribution
// differences between standard libraries, and cheap inside timed loops.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed * 0x9e3779b97f4a7c15ULL + 1) {}
  uint64_t next() {
    state_ ^= state_ >> 12;
    state_ ^= state_ << 25;
    state_ ^= state_ >> 27;
    return state_ * 0x2545f4914f6cdd1dULL;
  }
  /// Uniform in [0, n) (n small next to 2^64; the bias is negligible here).
  uint64_t below(uint64_t n) { return next() % n; }
  /// Uniform in [0, 2^bits): no division inside timed loops.
  uint64_t bits(int bits) { return next() >> (64 - bits); }

 private:
  uint64_t state_;
};

// Runs the engine (the caller's timing covers it); a deadlock fails the
// benchmark rather than reporting a meaningless speed.
RunResult run_checked(benchmark::State& state, Engine& engine) {
  RunResult result = engine.run();
  if (!result.completed()) state.SkipWithError("the run did not complete");
  return result;
}

// Events per second of the last run, its event count and simulated end.
void report_run(benchmark::State& state, const RunResult& last) {
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * last.events));
  state.counters["events"] = static_cast<double>(last.events);
  state.counters["sim_end_s"] = last.end.seconds();
}

// The "hold" model: a queue of N pending events; each step pops the earliest
// and schedules one a random time later, as a simulation does. One item is
// one event (pushed once, popped once).
void BM_EventQueueHold(benchmark::State& state) {
  const auto pending = static_cast<size_t>(state.range(0));
  EventQueue queue;
  queue.reserve(pending + 1);
  Rng rng(1);
  for (size_t i = 0; i < pending; ++i) {
    queue.push(Time::from_ps(static_cast<int64_t>(rng.below(1 << 20))), static_cast<uint32_t>(i),
               0);
  }
  for (auto _ : state) {
    const Event event = queue.pop();
    queue.push(Time::from_ps(event.time_ps + static_cast<int64_t>(rng.bits(20))), event.target,
               event.kind);
  }
  benchmark::DoNotOptimize(queue.top());
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_EventQueueHold)->Arg(1 << 6)->Arg(1 << 10)->Arg(1 << 16)->Arg(1 << 20);

// Fill with N random events, then drain: one item is one event.
void BM_EventQueueFillDrain(benchmark::State& state) {
  const auto n = static_cast<size_t>(state.range(0));
  EventQueue queue;
  queue.reserve(n);
  Rng rng(2);
  for (auto _ : state) {
    for (size_t i = 0; i < n; ++i) {
      queue.push(Time::from_ps(static_cast<int64_t>(rng.bits(20))), static_cast<uint32_t>(i), 0);
    }
    while (!queue.empty()) benchmark::DoNotOptimize(queue.pop());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * n));
}
BENCHMARK(BM_EventQueueFillDrain)->Arg(1 << 10)->Arg(1 << 20);

// A DAG of 1M delays on 4096 streams, each also depending on 0-2 random
// earlier activities in a window (like cross-stream events in a training
// step), plus a join every 64 activities gathering the last few.
void build_dag(Engine& engine, uint32_t activities, uint32_t streams) {
  Rng rng(3);
  engine.reserve(activities, 3 * static_cast<size_t>(activities));
  std::vector<StreamId> stream_ids;
  for (uint32_t s = 0; s < streams; ++s) stream_ids.push_back(engine.add_stream());
  std::vector<ActivityId> ids;
  ids.reserve(activities);
  constexpr uint64_t kWindow = 50'000;
  for (uint32_t i = 0; i < activities; ++i) {
    ActivityId id;
    if (i % 64 == 63) {
      id = engine.add_join(i);
      for (uint32_t k = 1; k <= 4; ++k) engine.add_dependency(ids[i - k], id);
    } else {
      const auto duration = static_cast<int64_t>(1'000'000 + rng.below(9'000'000));  // 1-10 us
      id = engine.add_delay(Time::from_ps(duration), stream_ids[rng.below(streams)], i);
      const uint64_t deps = i == 0 ? 0 : rng.below(3);
      for (uint64_t d = 0; d < deps; ++d) {
        const uint64_t window = i < kWindow ? i : kWindow;
        engine.add_dependency(ids[i - 1 - rng.below(window)], id);
      }
    }
    ids.push_back(id);
  }
}

void BM_EngineDag(benchmark::State& state) {
  const auto activities = static_cast<uint32_t>(state.range(0));
  const bool include_build = state.range(1) != 0;
  RunResult last;
  for (auto _ : state) {
    if (!include_build) state.PauseTiming();
    Engine engine;
    build_dag(engine, activities, 4096);
    if (!include_build) state.ResumeTiming();
    last = run_checked(state, engine);
    if (!include_build) state.PauseTiming();  // destruction is not the run
    engine = Engine();
    if (!include_build) state.ResumeTiming();
  }
  report_run(state, last);
}
BENCHMARK(BM_EngineDag)
    ->ArgNames({"activities", "with_build"})
    ->Args({1 << 20, 0})
    ->Args({1 << 20, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// A two-level fat tree: 1024 hosts under 32 leaves, 16 spines; host links
// 12.5 GB/s (100 Gb/s), leaf-spine links 12.5 GB/s (2:1 oversubscribed).
// Each link is one direction. 10k flows between random hosts, 1-16 MB each:
// 2 links inside a leaf, 4 across the spine. Flows start in groups of
// `group` at 1 us steps (their latency), so rates are re-solved as flows
// join and as each one finishes.
void BM_FatTreeFlows(benchmark::State& state) {
  const auto flows = static_cast<uint32_t>(state.range(0));
  const auto group = static_cast<uint32_t>(state.range(1));
  constexpr uint32_t kHosts = 1024, kPerLeaf = 32, kLeaves = kHosts / kPerLeaf, kSpines = 16;
  constexpr double kHostBw = 12.5e9, kSpineBw = 12.5e9;
  RunResult last;
  for (auto _ : state) {
    state.PauseTiming();
    Engine engine;
    std::vector<LinkId> host_up, host_down, leaf_up, leaf_down;
    for (uint32_t h = 0; h < kHosts; ++h) {
      host_up.push_back(engine.add_link(kHostBw));
      host_down.push_back(engine.add_link(kHostBw));
    }
    for (uint32_t i = 0; i < kLeaves * kSpines; ++i) {
      leaf_up.push_back(engine.add_link(kSpineBw));
      leaf_down.push_back(engine.add_link(kSpineBw));
    }
    Rng rng(4);
    std::vector<PathHop> path;
    for (uint32_t f = 0; f < flows; ++f) {
      const auto src = static_cast<uint32_t>(rng.below(kHosts));
      auto dst = static_cast<uint32_t>(rng.below(kHosts - 1));
      if (dst >= src) ++dst;
      path.clear();
      path.push_back(PathHop{host_up[src], 1});
      const uint32_t src_leaf = src / kPerLeaf, dst_leaf = dst / kPerLeaf;
      if (src_leaf != dst_leaf) {
        const auto spine = static_cast<uint32_t>(rng.below(kSpines));
        path.push_back(PathHop{leaf_up[src_leaf * kSpines + spine], 1});
        path.push_back(PathHop{leaf_down[dst_leaf * kSpines + spine], 1});
      }
      path.push_back(PathHop{host_down[dst], 1});
      const double bytes = 1e6 * static_cast<double>(1 + rng.below(16));
      const Time start = Time::from_ps(static_cast<int64_t>(f / group) * 1'000'000);
      engine.add_flow(bytes, path, start);
    }
    state.ResumeTiming();
    last = run_checked(state, engine);
  }
  report_run(state, last);
}
BENCHMARK(BM_FatTreeFlows)
    ->ArgNames({"flows", "group"})
    ->Args({10'000, 1})
    ->Args({10'000, 100})
    ->Args({2000, 100})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// A ring all-reduce step on 16,384 GPUs (2,048 nodes of 8) with 8 channels:
// every GPU sends one flow per channel to its successor in that channel's
// ring, 131,072 concurrent flows. Within a node a flow crosses the sender's
// NVLink egress (450 GB/s); between nodes it crosses the NIC uplink, a
// leaf-to-spine link, a spine-to-leaf link and the NIC downlink (50 GB/s
// NICs, 32 per leaf, 16 spines, leaf uplinks pruned 2:1). `steps` ring steps
// run back to back (each flow waits for the previous step's flow into its
// sender), so flows finishing at different times restart the solver often.
void BM_RingAllReduceFlows(benchmark::State& state) {
  const auto steps = static_cast<uint32_t>(state.range(0));
  constexpr uint32_t kGpus = 16'384, kPerNode = 8, kChannels = 8, kPerLeaf = 32, kSpines = 16;
  constexpr uint32_t kLeaves = kGpus / kPerLeaf;
  constexpr double kNvlinkBw = 450e9, kNicBw = 50e9;
  constexpr double kSpineBw = kNicBw * kPerLeaf / kSpines / 2.0;  // 2:1 pruned
  constexpr double kBytes = 1e9 / kGpus;                          // a 1 GB buffer in 1/N chunks
  RunResult last;
  size_t flows = 0;
  for (auto _ : state) {
    state.PauseTiming();
    Engine engine;
    std::vector<LinkId> nvlink, nic_up, nic_down, leaf_up, leaf_down;
    for (uint32_t g = 0; g < kGpus; ++g) {
      nvlink.push_back(engine.add_link(kNvlinkBw));
      nic_up.push_back(engine.add_link(kNicBw));
      nic_down.push_back(engine.add_link(kNicBw));
    }
    for (uint32_t i = 0; i < kLeaves * kSpines; ++i) {
      leaf_up.push_back(engine.add_link(kSpineBw));
      leaf_down.push_back(engine.add_link(kSpineBw));
    }
    // Channel c visits each node's GPUs starting at local rank c.
    const auto ring_next = [&](uint32_t channel, uint32_t gpu) {
      const uint32_t node = gpu / kPerNode, local = gpu % kPerNode;
      const uint32_t last_local = (channel + kPerNode - 1) % kPerNode;
      if (local != last_local) return node * kPerNode + (local + 1) % kPerNode;
      return ((node + 1) % (kGpus / kPerNode)) * kPerNode + channel;
    };
    std::vector<ActivityId> previous(static_cast<size_t>(kGpus) * kChannels);
    std::vector<ActivityId> current(previous.size());
    std::vector<PathHop> path;
    for (uint32_t step = 0; step < steps; ++step) {
      for (uint32_t c = 0; c < kChannels; ++c) {
        for (uint32_t g = 0; g < kGpus; ++g) {
          const uint32_t to = ring_next(c, g);
          path.clear();
          if (to / kPerNode == g / kPerNode) {
            path.push_back(PathHop{nvlink[g], 1});
          } else {
            const uint32_t spine = (g / kPerNode + c) % kSpines;
            path.push_back(PathHop{nic_up[g], 1});
            path.push_back(PathHop{leaf_up[(g / kPerLeaf) * kSpines + spine], 1});
            path.push_back(PathHop{leaf_down[(to / kPerLeaf) * kSpines + spine], 1});
            path.push_back(PathHop{nic_down[to], 1});
          }
          const ActivityId flow = engine.add_flow(kBytes, path, Time::from_ps(2'000'000));
          current[static_cast<size_t>(c) * kGpus + to] = flow;  // what `to` receives
          if (step > 0) engine.add_dependency(previous[static_cast<size_t>(c) * kGpus + g], flow);
        }
      }
      std::swap(previous, current);
    }
    flows = engine.activity_count();
    state.ResumeTiming();
    last = run_checked(state, engine);
  }
  report_run(state, last);
  state.counters["flows"] = static_cast<double>(flows);
}
BENCHMARK(BM_RingAllReduceFlows)
    ->ArgNames({"steps"})
    ->Arg(1)
    ->Arg(4)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace podsim::sim

// The suite's one main (tools/CMakeLists.txt links benchmark::benchmark, not
// benchmark_main); other benchmark files only register benchmarks.
BENCHMARK_MAIN();
