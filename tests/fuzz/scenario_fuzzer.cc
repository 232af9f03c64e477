// libFuzzer target: scenario text -> reader -> simulate. Bad input must come
// back as problems; anything else -- an exception leaving simulate (an
// "internal error" of the CLI), an abort, a sanitizer report, a hang or
// unbounded memory -- is a finding. tools/fuzz builds and runs it.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "scenarios/input/reader.h"
#include "scenarios/step/simulate.h"

namespace {

/// Jobs larger than this are read but not simulated: a 16,384-GPU step is
/// correct but takes seconds under the sanitizers, and the fuzzer's time is
/// better spent on many small odd inputs.
constexpr int64_t kMaxSimulatedGpus = 4096;

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
  if (s.gpus > kMaxSimulatedGpus) return 0;
  s.cluster.gpu.profile.clear();  // the fuzzer reads no files
  const Result<Report> report = simulate(s);
  if (!report.ok()) {
    for (const Problem& p : report.problems()) {
      if (p.message.empty()) __builtin_trap();
    }
  }
  return 0;
}
