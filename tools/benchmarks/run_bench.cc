// Speed of the run sampler (docs/goodput.md): 1,000 sampled runs of Llama 3
// 405B's 15.6T tokens on 16,384 H100 (about 800 interruptions and 130,000
// checkpoints each), at the default scenario's step time; target under 0.5 s
// on one core, so `podsim run` with a token budget stays interactive.
#include <benchmark/benchmark.h>

#include "scenarios/input/reader.h"
#include "scenarios/run/run_model.h"
#include "scenarios/run/run_report.h"

namespace {

void BM_Run_Llama3_405B_16kH100_1000Samples(benchmark::State& state) {
  auto spec = podsim::scenarios::read_default_scenario();
  if (!spec.ok()) {
    state.SkipWithError("cannot read the default scenario");
    return;
  }
  // The default scenario's simulated step (6.61 s), one slow GPU adding 8%.
  const podsim::scenarios::RunModel model =
      podsim::scenarios::run_model(spec.value(), 15.6e12, 6.61, 6.61 * 1.08);
  for (auto _ : state) {
    const podsim::scenarios::RunReport r = podsim::scenarios::sample_runs(model, 1000, 1);
    benchmark::DoNotOptimize(r.wall_s.median);
    state.counters["interruptions_per_run"] = r.interruptions.mean;
  }
}
BENCHMARK(BM_Run_Llama3_405B_16kH100_1000Samples)->Unit(benchmark::kMillisecond);

}  // namespace
