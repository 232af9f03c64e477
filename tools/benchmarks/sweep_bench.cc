// Speed of `podsim sweep` (issue 8's target): every valid plan of Llama 3 70B
// on 1,024 H100 (seq 8192, global batch 1024; scenarios/examples/
// llama3-70b-1024-h100.json) in under 60 s on the 2 cores of the CI machine,
// all cores used. Also the Llama 3 405B / 16,384 H100 acceptance sweep
// (scenarios/examples/llama3-405b-16k.json, micro-batches 1, 2, 4), and a
// mixture-of-experts sweep whose plans each price their experts' load
// imbalance (scenarios/examples/mixtral-8x7b-ep.json, 440,223 plans). Counters:
// plans enumerated, pruned by the memory bound, skipped by the step-time
// bound, simulated, and plans per second of wall time.
#include <benchmark/benchmark.h>

#include <chrono>
#include <string>
#include <vector>

#include "scenarios/sweep/sweep.h"
#include "tools/benchmarks/bench_scenarios.h"

namespace {

using podsim::bench::load_scenario;
using podsim::scenarios::ScenarioSpec;
using podsim::scenarios::SweepOptions;

void run_sweep(benchmark::State& state, const ScenarioSpec& spec, const SweepOptions& options) {
  auto target = podsim::scenarios::make_sweep_target(spec, spec.gpus, std::nullopt);
  if (!target.ok()) {
    state.SkipWithError("no target");
    return;
  }
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    auto outcome = podsim::scenarios::run_sweep(spec, {target.value()}, options);
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!outcome.ok()) {
      state.SkipWithError("sweep failed");
      return;
    }
    const auto& o = outcome.value();
    benchmark::DoNotOptimize(o.ranked.data());
    state.counters["plans"] = static_cast<double>(o.plans_total);
    state.counters["pruned_memory"] = static_cast<double>(o.plans_pruned_memory);
    state.counters["skipped_bound"] = static_cast<double>(o.plans_skipped_by_bound);
    state.counters["simulated"] = static_cast<double>(o.plans_simulated);
    state.counters["plans_per_s"] = static_cast<double>(o.plans_total) / wall;
    state.counters["best_step_s"] = o.ranked.empty() ? 0.0 : o.ranked.front().outcome.step_time_s;
  }
}

void BM_Sweep_Llama3_70B_1024H100(benchmark::State& state) {
  run_sweep(state, load_scenario("scenarios/examples/llama3-70b-1024-h100.json"), SweepOptions{});
}
BENCHMARK(BM_Sweep_Llama3_70B_1024H100)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();

void BM_Sweep_Llama3_405B_16kH100(benchmark::State& state) {
  SweepOptions options;
  options.space.micro_batches = {1, 2, 4};
  run_sweep(state, load_scenario("scenarios/examples/llama3-405b-16k.json"), options);
}
BENCHMARK(BM_Sweep_Llama3_405B_16kH100)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();

void BM_Sweep_Mixtral_8x7B_64H100(benchmark::State& state) {
  run_sweep(state, load_scenario("scenarios/examples/mixtral-8x7b-ep.json"), SweepOptions{});
}
BENCHMARK(BM_Sweep_Mixtral_8x7B_64H100)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();

}  // namespace
