#pragma once

// The words and numbers the sweep's writers share (sweep_report.cc: JSON,
// CSV and text; sweep_html.cc): names of plan settings, counts, targets and
// the baseline's rank in words. Internal to report/.

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "scenarios/input/spec.h"
#include "scenarios/sweep/sweep.h"
#include "strategies/plan.h"

namespace podsim::scenarios::sweep_labels {

inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

/// The scenario format's names: "gpipe", "1f1b", "interleaved_1f1b", "zero_bubble".
const char* schedule_name(strategies::PipelineSchedule s);
/// "ring", "ulysses", "all_gather".
const char* context_name(strategies::ContextAlgorithm a);
/// "none", "selective", "full", "every 4".
std::string recompute_name(const strategies::Recompute& r);
/// "tp-cp-ep-dp-pp".
std::string order_text(const std::array<strategies::Dim, strategies::kDims>& order);
/// %.9g: enough digits to tell plans apart, same text for the same value.
std::string g9(double v);
/// `decimals` digits after the point (svg.h's fixed_number).
std::string fixed(double v, int decimals);
/// "1.44M", "812k", "950".
std::string si_count(double v);
/// "$1.23M", "$812k", "$950".
std::string dollars(double v);
/// "3.2 h", "12.5 days".
std::string duration_text(double seconds);
/// Failure-free time over the expected time to train: the plan's ETTR.
double ettr(const RankedPlan& r);
/// Dollars when every target has a price, else GPU-hours.
std::string cost_text(const SweepOutcome& o, const RankedPlan& r);
/// Per ranked plan: on the Pareto front.
std::vector<bool> front_flags(const SweepOutcome& o);
/// The baseline's "rank 3", with the worst rank when bounds left it open and,
/// when several targets were swept, its rank on its own target; or why it
/// does not fit. A fitting baseline with less free memory than the sweep's
/// --min-headroom says so.
std::string baseline_rank_text(const SweepOutcome& o);
/// The targets' notes and price sources, each once, in order of appearance.
std::vector<std::string> target_notes(const SweepOutcome& o);
/// "N valid plans: ... pruned, ... skipped, ... simulated (...)".
std::string counts_text(const SweepOutcome& o);
/// "16 x b200 (2 nodes, NVLink 900 GB/s, $5.25/GPU-h) [1][2]": the long
/// notes are numbered once (target_notes).
std::string target_text(const SweepOutcome& o, const SweepTarget& t);
/// Per target: the index into `ranked` of its fastest plan that fits, or
/// none when no plan of the target fits.
std::vector<std::optional<size_t>> best_per_target(const SweepOutcome& o);
/// "$4.20/GPU-h (list)", "$5.25/GPU-h (reference)", "no price".
std::string price_text(const SweepTarget& t);

/// %.3g: "1e+12".
std::string tokens_text(double tokens);

/// What was swept, for titles: "llama3-70b, seq 8192, global batch 1024 on
/// 1024 GPUs of h100-sxm-80g, h200-sxm-141g or b200".
std::string swept_title(const ScenarioSpec& scenario, const SweepOutcome& o);
/// The plans collapsed into ranked[k], each by what its label has that
/// ranked[k]'s does not, with its rank: "zero=2 (rank 2)"; empty when it has
/// no twins.
std::string variant_names(const SweepOutcome& o, size_t k);
/// variant_names and why ranked[k] is the one shown; empty without twins.
std::string variants_text(const SweepOutcome& o, size_t k);
/// Whether ranked[k] is a row of its own (not collapsed into another).
inline bool own_row(const SweepOutcome& o, size_t k) { return !o.ranked[k].collapsed_into; }
/// What "tied" means for this sweep, a line per target that has an error:
/// the error, its family and why that family; empty when none has one.
std::vector<std::string> tie_lines(const SweepOutcome& o);
/// "--min-headroom 4.0 GiB" / "--min-headroom 10.0% of the GPU's memory"; ""
/// without one.
std::string headroom_text(const SweepOutcome& o);

}  // namespace podsim::scenarios::sweep_labels
