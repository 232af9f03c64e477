#include "scenarios/validate/nearest_family.h"

#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "scenarios/input/embedded_data.h"
#include "strategies/model_counts.h"

namespace podsim::scenarios {
namespace {

double parameters(const ScenarioSpec& s) {
  return strategies::count_parameters(s.model, s.training.seq_len).total;
}

/// Scale distance between two jobs: the orders of magnitude between their
/// models and GPU counts, and 1 for a different precision.
double scale_distance(const ScenarioSpec& a, const ScenarioSpec& b) {
  const double pa = parameters(a), pb = parameters(b);
  double d = 0;
  if (pa > 0 && pb > 0) d += std::fabs(std::log(pa / pb));
  if (a.gpus > 0 && b.gpus > 0) {
    d += std::fabs(std::log(static_cast<double>(a.gpus) / static_cast<double>(b.gpus)));
  }
  if (a.training.precision != b.training.precision) d += 1;
  return d;
}

}  // namespace

std::vector<ValidationCase> builtin_validation_cases() {
  std::vector<ValidationCase> out;
  for (const char* file :
       {"../validation/published.json", "../validation/moe-and-accelerators.json"}) {
    Result<std::vector<ValidationCase>> read = read_validation_text(embedded_file(file));
    if (!read.ok()) continue;
    for (ValidationCase& c : read.value()) {
      if (c.scenario && c.problems.empty()) out.push_back(std::move(c));
    }
  }
  return out;
}

std::string model_kind(const ScenarioSpec& scenario) {
  return scenario.model.moe ? "MoE" : "dense";
}

std::optional<FamilyError> nearest_family(const ScenarioSpec& scenario,
                                          const std::vector<ValidationCase>& cases) {
  // Smaller is nearer: (other GPU, other model kind, other software, scale
  // distance, family).
  using Score = std::tuple<int, int, int, double, std::string>;
  const std::string kind = model_kind(scenario);
  std::optional<Score> best;
  const ValidationCase* nearest = nullptr;
  for (const ValidationCase& c : cases) {
    if (!c.scenario) continue;
    const ScenarioSpec& s = *c.scenario;
    const Score score{s.cluster.gpu.name == scenario.cluster.gpu.name ? 0 : 1,
                      model_kind(s) == kind ? 0 : 1,
                      s.software.name == scenario.software.name ? 0 : 1,
                      scale_distance(s, scenario), case_family(c.id)};
    if (!best || score < *best) {
      best = score;
      nearest = &c;
    }
  }
  if (nearest == nullptr) return std::nullopt;
  const ScenarioSpec& s = *nearest->scenario;
  FamilyError f;
  f.family = std::get<4>(*best);
  // A family with both kinds counts only the nearest case's.
  const std::string nearest_kind = model_kind(s);
  for (const ValidationCase& c : cases) {
    if (c.scenario && case_family(c.id) == f.family && model_kind(*c.scenario) != nearest_kind) {
      f.kind = nearest_kind;
    }
  }
  const bool same_gpu = std::get<0>(*best) == 0, same_software = std::get<2>(*best) == 0;
  f.basis = std::string(same_gpu ? "same GPU (" : "no validation case on this GPU (") +
            scenario.cluster.gpu.name + ")" +
            (same_software ? ", same software (" : ", other software than ") +
            scenario.software.name + (same_software ? ")" : "") + "; nearest case " + nearest->id +
            " (" + std::to_string(s.gpus) + " x " + s.cluster.gpu.name + ", " + s.software.name +
            (f.kind.empty() ? ")" : "; its family's " + f.kind + " cases)");
  return f;
}

bool measure_family_error(FamilyError& family, const std::vector<ValidationCase>& cases,
                          const SimulateFn& simulate) {
  std::vector<ValidationCase> members;
  for (const ValidationCase& c : cases) {
    if (case_family(c.id) != family.family || !c.scenario) continue;
    if (family.kind.empty() || model_kind(*c.scenario) == family.kind) members.push_back(c);
  }
  const ValidationSummary summary = run_validation(members, simulate);
  for (const GroupStats& g : summary.families) {
    if (g.name != family.family || g.cases == 0) continue;
    family.mape = g.mape;
    family.cases = g.cases;
    return true;
  }
  return false;
}

}  // namespace podsim::scenarios
