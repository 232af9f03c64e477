#pragma once

#include <optional>
#include <string>
#include <vector>

#include "scenarios/input/spec.h"
#include "scenarios/validate/validation.h"

namespace podsim::scenarios {

// How far off podsim is for jobs like one you plan: the step-time MAPE of
// the published family nearest to it (docs/sweep.md, "Ties").

/// The validation cases the binary carries: validation/published.json,
/// embedded at build time. Cases with problems are left out.
std::vector<ValidationCase> builtin_validation_cases();

struct FamilyError {
  std::string family;  ///< case_family of its cases: "dgxc_llama31"
  double mape = 0;     ///< mean |step-time error| of its cases that ran (fraction)
  size_t cases = 0;    ///< the cases the MAPE is over
  std::string basis;   ///< why this family, in words
};

/// The family nearest to `scenario`, by its cases: first a case on the same
/// GPU (the cluster's GPU name), then on the same software preset, then the
/// closest in scale (|ln| of the model's parameter ratio plus |ln| of the
/// GPU-count ratio, plus 1 when the precision differs); ties go to the
/// family name. `family` and `basis` are set; none when `cases` is empty.
std::optional<FamilyError> nearest_family(const ScenarioSpec& scenario,
                                          const std::vector<ValidationCase>& cases);

/// Fills in `family`'s MAPE by simulating every case of it with `simulate`
/// (step_time_error, as `podsim validate` counts it); false when none ran.
bool measure_family_error(FamilyError& family, const std::vector<ValidationCase>& cases,
                          const SimulateFn& simulate);

}  // namespace podsim::scenarios
