// Speed and memory of whole training steps (issue 4's targets):
// - GPT-3 175B, TP8 PP8 DP16 on 1,024 A100 with every rank simulated:
//   under 1 s and 200 MB on one core (scenarios/examples/gpt3-175b-selene.json);
// - the default 16,384-GPU Llama 3 405B step (symmetric): under 2 s.
// Counters: simulated ranks, engine events and the process's peak resident
// memory (getrusage; the benchmark binary does not load the CUDA libraries the
// CLI links, so this is the simulator's own footprint).
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <string>

#include "scenarios/step/simulate.h"
#include "tools/benchmarks/bench_scenarios.h"

namespace {

using podsim::bench::load_scenario;
using podsim::scenarios::ScenarioSpec;
using podsim::scenarios::SimulationMode;

double peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // Linux: KiB
}

void run_step(benchmark::State& state, const ScenarioSpec& spec, SimulationMode mode) {
  podsim::scenarios::SimulateOptions options;
  options.mode = mode;
  for (auto _ : state) {
    auto report = podsim::scenarios::simulate(spec, options);
    if (!report.ok()) {
      state.SkipWithError("simulation failed");
      return;
    }
    benchmark::DoNotOptimize(report.value().step_time_s);
    state.counters["ranks"] = static_cast<double>(report.value().simulated_ranks);
    state.counters["events"] = static_cast<double>(report.value().engine_events);
  }
  state.counters["peak_rss_MB"] = peak_rss_mb();
}

void BM_Gpt3_175B_1024A100_EveryRank(benchmark::State& state) {
  run_step(state, load_scenario("scenarios/examples/gpt3-175b-selene.json"),
           SimulationMode::kEveryRank);
}
BENCHMARK(BM_Gpt3_175B_1024A100_EveryRank)->Unit(benchmark::kMillisecond)->Iterations(1);

void BM_Gpt3_175B_1024A100_Symmetric(benchmark::State& state) {
  run_step(state, load_scenario("scenarios/examples/gpt3-175b-selene.json"),
           SimulationMode::kSymmetric);
}
BENCHMARK(BM_Gpt3_175B_1024A100_Symmetric)->Unit(benchmark::kMillisecond);

void BM_Llama3_405B_16kH100_Default(benchmark::State& state) {
  auto spec = podsim::scenarios::read_default_scenario();
  if (!spec.ok()) {
    state.SkipWithError("cannot read the default scenario");
    return;
  }
  run_step(state, spec.value(), SimulationMode::kSymmetric);
}
BENCHMARK(BM_Llama3_405B_16kH100_Default)->Unit(benchmark::kMillisecond);

}  // namespace
