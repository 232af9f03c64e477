#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "scenarios/input/problem.h"
#include "scenarios/input/reader.h"
#include "scenarios/input/spec.h"
#include "scenarios/step/report.h"

namespace podsim::scenarios {

/// The compared quantities of a run, measured or predicted. Any subset may
/// be present.
struct RunValues {
  std::optional<double> step_time_s;
  std::optional<double> tflops_per_gpu;  ///< model TFLOP/s per GPU
  std::optional<double> mfu;
  std::optional<double> memory_peak_gib;  ///< per GPU, GiB (2^30 bytes)
};

/// One case of a validation file (scenario-format.md, "Validation cases").
struct ValidationCase {
  std::string id;
  std::string source;
  std::string notes;
  RunValues measured;
  /// The checked scenario, or nullopt when the case has problems.
  std::optional<ScenarioSpec> scenario;
  /// Problems of this case alone (paths like /cases/3/scenario/parallelism/tp).
  std::vector<Problem> problems;
  /// The scenario as written, without its name and notes (canonical JSON):
  /// cases with the same key describe the same run. "" without a scenario.
  std::string scenario_key;
};

/// Reads a validation-case file. Problems of the file as a whole (not JSON,
/// no "cases", unknown top-level keys) fail the read; a case with problems
/// is kept with its problems and the other cases still load.
Result<std::vector<ValidationCase>> read_validation_text(std::string_view text,
                                                         const ReadOptions& options = {});
Result<std::vector<ValidationCase>> read_validation_file(const std::string& path,
                                                         const ReadOptions& options = {});

/// The outcome of one case.
struct CaseOutcome {
  std::string id;
  std::string family;    ///< case_family(id)
  std::string software;  ///< the scenario's software preset ("" when it could not be read)
  RunValues measured;
  RunValues predicted;  ///< empty when the case failed
  std::optional<Report> report;
  /// Why the case could not be read or simulated ("" when it ran).
  std::string error_message;
  /// Signed relative errors, predicted / measured - 1, for the measured keys.
  RunValues error;
};

/// Step-time errors of a group of cases (a family, a software preset).
struct GroupStats {
  std::string name;
  size_t cases = 0;  ///< cases with a step-time-sense error
  double mape = 0;
  double mean_signed = 0;
  size_t within_10pct = 0;
};

/// One scenario measured by several cases (the same inputs in several
/// sources or software releases): no single prediction can be closer to all
/// of them than their spread allows.
struct RepeatedScenario {
  std::vector<size_t> cases;  ///< indices into ValidationSummary::cases, file order
  double measured_min_s = 0;
  double measured_max_s = 0;
  double predicted_s = 0;
  /// The least worst-case |step-time error| any one prediction can have
  /// against these measurements: (max - min) / (max + min), reached at
  /// their harmonic mean.
  double best_possible_error() const;
};

/// All cases and the summary statistics (fractions, not percent).
struct ValidationSummary {
  std::vector<CaseOutcome> cases;
  /// By family and by software preset, in name order, over every case's
  /// step_time_error.
  std::vector<GroupStats> families;
  std::vector<GroupStats> software;
  size_t step_time_within_10pct = 0;  ///< cases that measured step time
  std::optional<double> mape_step_time;
  std::optional<double> mape_tflops_per_gpu;
  std::optional<double> mape_mfu;
  std::optional<double> mape_memory;
  std::optional<double> median_abs_error_step_time;
  size_t failed = 0;
  /// Simulated cases whose plan does not fit in GPU memory as written: the
  /// measured run kept less (recompute or offload its source did not
  /// print), or the memory model counts more than it kept.
  size_t not_fitting = 0;
  /// Scenarios that two or more simulated cases measured the step time of,
  /// widest spread (max / min) first.
  std::vector<RepeatedScenario> repeated;
};

/// Simulates one checked scenario (scenarios::simulate in the binary, a fake
/// in tests).
using SimulateFn = std::function<Result<Report>(const ScenarioSpec&)>;

/// Runs every case (never stopping at a bad one) and summarises: each MAPE
/// is the mean |error| over the cases that measured that key and ran.
ValidationSummary run_validation(const std::vector<ValidationCase>& cases,
                                 const SimulateFn& simulate);

/// Groups of two or more cases with the same scenario_key, each in file
/// order, the groups in the order of their first case.
std::vector<std::vector<size_t>> identical_scenarios(const std::vector<ValidationCase>& cases);

/// A case's family: its id's first two '_'-separated words when the first
/// has no digit ("dgxc_gpt3", "megatron_sc21", "torchtitan_paper"), else the
/// first ("korthikanti22", "nemo2407").
std::string case_family(std::string_view id);

/// A case's error in step-time sense: the step-time error, else the one
/// its TFLOP/s or MFU error implies (a step 1 / (1 + e) - 1 off).
std::optional<double> step_time_error(const CaseOutcome& c);

/// The report's values in the compared form (memory in GiB).
RunValues predicted_values(const Report& report);

/// The largest part of the step time in the report's breakdown: its label
/// ("compute", "bubble", "exposed DP comm", ...) and seconds.
std::pair<std::string, double> dominant_term(const Report& report);

/// The cases ranked by |error| (step time if measured, else TFLOP/s, else
/// MFU), worst first, at most `count`: indices into summary.cases.
std::vector<size_t> worst_cases(const ValidationSummary& summary, size_t count);

}  // namespace podsim::scenarios
