// libFuzzer target: scenario text -> reader -> simulate. Bad input must come
// back as problems; anything else -- an exception leaving simulate (an
// "internal error" of the CLI), an abort, a sanitizer report, a hang or
// unbounded memory -- is a finding. tools/fuzz builds and runs it.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "scenarios/input/reader.h"
#include "scenarios/step/simulate.h"
#include "scenarios/step/software.h"
#include "strategies/job.h"

namespace {

/// Jobs larger than these are read but not simulated: their steps are correct
/// but take seconds under the sanitizers, and the fuzzer's time is better spent
/// on many small odd inputs. Two measures of size: GPUs (a 16,384-GPU step),
/// and micro-batches per pipeline times layers, the layer passes each simulated
/// pipeline runs (the DeepSeek-V3 recipe example, 256 x 61 = 15,616, took 12 s
/// warm and 22 s cold in this build, 2026-12-07, against tools/fuzz's 20 s
/// timeout per input; its GPT-3 example, 96 x 96, 6 s): simulated, such seeds
/// took all of CI's 30 s run. tests/fuzz/corpus/ keeps the two DeepSeek-V3
/// examples cut to 16 and 32 micro-batches, under both bounds, so their MoE,
/// MLA and DualPipe paths stay among the seeds.
constexpr int64_t kMaxSimulatedGpus = 4096;
constexpr int64_t kMaxSimulatedLayerPasses = 4096;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace podsim::scenarios;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  Result<ScenarioSpec> spec = read_scenario_text(text);
  if (!spec.ok()) {
    // Every problem must say where: a path ("" is the document) and a message.
    for (const Problem& p : spec.problems()) {
      if (p.message.empty() || (!p.path.empty() && p.path.front() != '/')) __builtin_trap();
    }
    return 0;
  }
  ScenarioSpec& s = spec.value();
  const int64_t micro_batches = podsim::strategies::micro_batches(job_of(s));
  if (s.gpus > kMaxSimulatedGpus || micro_batches * s.model.layers > kMaxSimulatedLayerPasses) {
    return 0;
  }
  s.cluster.gpu.profile.clear();  // the fuzzer reads no files
  const Result<Report> report = simulate(s);
  if (!report.ok()) {
    for (const Problem& p : report.problems()) {
      if (p.message.empty()) __builtin_trap();
    }
  }
  return 0;
}
