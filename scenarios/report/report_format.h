#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>

#include "scenarios/input/problem.h"
#include "scenarios/step/report.h"

namespace podsim::scenarios {

/// The report as the contract's JSON object (scenario-format.md, "The
/// report") plus the extra fields of Report; the fingerprint is a 16-digit
/// hex string. Keys come out sorted, numbers in shortest round-trip form, so
/// the same report always prints the same bytes.
nlohmann::json report_to_json(const Report& report);

/// The inverse of report_to_json, for scripts and sweeps that read reports
/// back. Problems name the JSON path of a missing or mistyped key.
Result<Report> report_from_json(const nlohmann::json& json);

/// report_to_json, pretty-printed, with a trailing newline.
std::string report_json_text(const Report& report);

/// The report for people: aligned columns with units ("12.34 s",
/// "61.2 GiB", "412 TFLOP/s").
std::string format_report_text(const Report& report);

}  // namespace podsim::scenarios
