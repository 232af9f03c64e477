#pragma once

#include <optional>
#include <string>
#include <vector>

#include "scenarios/input/spec.h"
#include "scenarios/validate/validation.h"

namespace podsim::scenarios {

// How far off podsim is for jobs like one you plan: the step-time MAPE of
// the published family nearest to it (docs/sweep.md, "Ties").

/// The validation cases the binary carries: validation/published.json and
/// validation/moe-and-accelerators.json, embedded at build time. Cases with
/// problems are left out.
std::vector<ValidationCase> builtin_validation_cases();

/// Whether a job's model routes through experts: "MoE", else "dense".
std::string model_kind(const ScenarioSpec& scenario);

struct FamilyError {
  std::string family;  ///< case_family of its cases: "dgxc_llama31"
  /// model_kind of the cases that count, where the family has both kinds
  /// (MoE layers err differently from dense ones); "" = all of them.
  std::string kind;
  double mape = 0;    ///< mean |step-time error| of its cases that ran (fraction)
  size_t cases = 0;   ///< the cases the MAPE is over
  std::string basis;  ///< why this family, in words

  /// "dgxc_llama31", or "megatron_bridge MoE" when only one kind counts.
  std::string label() const { return kind.empty() ? family : family + " " + kind; }
};

/// The family nearest to `scenario`, by its cases: first a case on the same
/// GPU (the cluster's GPU name), then of the same model kind (MoE or dense),
/// then on the same software preset, then the closest in scale (|ln| of the
/// model's parameter ratio plus |ln| of the GPU-count ratio, plus 1 when the
/// precision differs); ties go to the family name. `family`, `kind` and
/// `basis` are set; none when `cases` is empty.
std::optional<FamilyError> nearest_family(const ScenarioSpec& scenario,
                                          const std::vector<ValidationCase>& cases);

/// Fills in `family`'s MAPE by simulating every case of it (of its `kind`,
/// when set) with `simulate` (step_time_error, as `podsim validate` counts
/// it); false when none ran.
bool measure_family_error(FamilyError& family, const std::vector<ValidationCase>& cases,
                          const SimulateFn& simulate);

}  // namespace podsim::scenarios
