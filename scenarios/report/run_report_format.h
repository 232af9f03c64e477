#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>

#include "scenarios/run/run_report.h"

namespace podsim::scenarios {

/// The run-level figures as the "run" object of `podsim run --json`
/// (scenarios/run/README.md lists the keys): seconds, bytes, GPU-hours;
/// spreads as {"mean", "median", "p5", "p95"}.
nlohmann::json run_report_to_json(const RunReport& report);

/// The run-level figures for people: time and cost to train, ETTR, goodput,
/// where the run's time went, the interruptions by class, the checkpoint
/// and the stragglers.
std::string format_run_report_text(const RunReport& report);

}  // namespace podsim::scenarios
