#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>

#include "scenarios/validate/validation.h"

namespace podsim::scenarios {

/// The contract's validation object: {"cases": [{"id", "predicted",
/// "measured", "error"} or {"id", "measured", "error_message"}],
/// "mape_step_time", "mape_tflops_per_gpu", "mape_memory"} (MAPEs are
/// fractions; null when no case measured the key), plus "mape_mfu",
/// "median_abs_error_step_time", "cases_failed" and "worst" (ids, worst first).
nlohmann::json validation_to_json(const ValidationSummary& summary);
std::string validation_json_text(const ValidationSummary& summary);

/// The validation table and summary for people.
std::string format_validation_text(const ValidationSummary& summary);

}  // namespace podsim::scenarios
