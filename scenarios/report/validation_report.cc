#include "scenarios/report/validation_report.h"

#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "calibration/fit.h"
#include "scenarios/input/quantity.h"
#include "scenarios/report/text_table.h"
#include "sim/format_fixed.h"

namespace podsim::scenarios {

using nlohmann::json;

namespace {

json values_json(const RunValues& values) {
  json out = json::object();
  if (values.step_time_s) out["step_time_s"] = *values.step_time_s;
  if (values.tflops_per_gpu) out["tflops_per_gpu"] = *values.tflops_per_gpu;
  if (values.mfu) out["mfu"] = *values.mfu;
  if (values.memory_peak_gib) out["memory_peak_gib"] = *values.memory_peak_gib;
  return out;
}

json optional_json(const std::optional<double>& value) {
  return value ? json(*value) : json(nullptr);
}

std::string signed_percent(double fraction) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%+.1f%%", fraction * 100.0);
  return buffer;
}

std::string or_dash(const std::optional<double>& value, std::string (*format)(double)) {
  return value ? format(*value) : std::string("-");
}

std::string seconds_text(double v) { return format_seconds(v); }
std::string percent_text(double v) { return format_percent(v); }
std::string signed_text(double v) { return signed_percent(v); }
std::string tflops_text(double v) { return format_fixed(v, 1); }
std::string gib_text(double v) { return format_fixed(v, 1) + " GiB"; }

/// How far apart the measurements of one scenario are, and where the
/// prediction falls: the floor under any model's error on those cases.
std::string format_repeated_scenarios(const ValidationSummary& summary) {
  if (summary.repeated.empty()) return "";
  constexpr size_t kListed = 10;
  std::vector<double> spreads;
  size_t inside = 0;
  for (const RepeatedScenario& r : summary.repeated) {
    spreads.push_back(r.measured_max_s / r.measured_min_s);
    inside += r.predicted_s >= r.measured_min_s && r.predicted_s <= r.measured_max_s ? 1 : 0;
  }
  const size_t n = spreads.size();  // widest first: spreads.front() is the largest
  std::string out = "\nSame scenario measured by several cases: " + std::to_string(n) +
                    " scenarios, measured max/min up to " + format_fixed(spreads.front(), 2) +
                    "x (median " + format_fixed(calibration::median(spreads), 2) +
                    "x); the prediction lies within the measured range for " +
                    std::to_string(inside) + " of " + std::to_string(n) + "\n";
  std::vector<std::vector<std::string>> table;
  table.push_back({"  SPREAD", "MEASURED", "PREDICTED", "BEST POSSIBLE", "CASES"});
  for (size_t g = 0; g < n && g < kListed; ++g) {
    const RepeatedScenario& r = summary.repeated[g];
    std::string ids;
    for (const size_t i : r.cases) ids += (ids.empty() ? "" : ", ") + summary.cases[i].id;
    table.push_back({"  " + format_fixed(spreads[g], 2) + "x",
                     format_seconds(r.measured_min_s) + " .. " + format_seconds(r.measured_max_s),
                     format_seconds(r.predicted_s), "+-" + format_percent(r.best_possible_error()),
                     ids});
  }
  out += format_columns(table, "RLRRL");
  if (n > kListed) out += "  ... and " + std::to_string(n - kListed) + " more (--json lists all)\n";
  return out;
}

}  // namespace

json validation_to_json(const ValidationSummary& summary) {
  json cases = json::array();
  for (const CaseOutcome& c : summary.cases) {
    json entry;
    entry["id"] = c.id;
    entry["family"] = c.family;
    if (!c.software.empty()) entry["software"] = c.software;
    entry["measured"] = values_json(c.measured);
    if (c.report) {
      entry["predicted"] = values_json(c.predicted);
      entry["error"] = values_json(c.error);
      entry["dominant_term"] = dominant_term(*c.report).first;
      entry["fits_in_memory"] = c.report->memory_fits;
    } else {
      entry["error_message"] = c.error_message;
    }
    cases.push_back(std::move(entry));
  }
  json out;
  out["cases"] = std::move(cases);
  out["mape_step_time"] = optional_json(summary.mape_step_time);
  out["mape_tflops_per_gpu"] = optional_json(summary.mape_tflops_per_gpu);
  out["mape_mfu"] = optional_json(summary.mape_mfu);
  out["mape_memory"] = optional_json(summary.mape_memory);
  out["median_abs_error_step_time"] = optional_json(summary.median_abs_error_step_time);
  out["cases_failed"] = summary.failed;
  out["cases_not_fitting"] = summary.not_fitting;
  out["step_time_within_10pct"] = summary.step_time_within_10pct;
  const auto groups_json = [](const std::vector<GroupStats>& groups) {
    json list = json::array();
    for (const GroupStats& g : groups) {
      list.push_back({{"name", g.name},
                      {"cases", g.cases},
                      {"mape_step_time", g.mape},
                      {"mean_error_step_time", g.mean_signed},
                      {"within_10pct", g.within_10pct}});
    }
    return list;
  };
  out["families"] = groups_json(summary.families);
  out["software"] = groups_json(summary.software);
  json worst = json::array();
  for (const size_t i : worst_cases(summary, 5)) worst.push_back(summary.cases[i].id);
  out["worst"] = std::move(worst);
  json repeated = json::array();
  for (const RepeatedScenario& r : summary.repeated) {
    json ids = json::array();
    for (const size_t i : r.cases) ids.push_back(summary.cases[i].id);
    repeated.push_back({{"cases", std::move(ids)},
                        {"measured_min_step_time_s", r.measured_min_s},
                        {"measured_max_step_time_s", r.measured_max_s},
                        {"predicted_step_time_s", r.predicted_s},
                        {"best_possible_error", r.best_possible_error()}});
  }
  out["repeated_scenarios"] = std::move(repeated);
  return out;
}

std::string validation_json_text(const ValidationSummary& summary) {
  return validation_to_json(summary).dump(2) + "\n";
}

std::string format_validation_text(const ValidationSummary& summary) {
  std::string out;
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"CASE", "STEP pred", "STEP meas", "err", "MFU pred", "MFU meas", "err",
                  "TFLOP/s pred", "meas", "err", "MEM pred", "meas", "err", "fits"});
  for (const CaseOutcome& c : summary.cases) {
    if (!c.report) {
      rows.push_back({c.id, "FAILED"});
      continue;
    }
    rows.push_back(
        {c.id, or_dash(c.predicted.step_time_s, seconds_text),
         or_dash(c.measured.step_time_s, seconds_text), or_dash(c.error.step_time_s, signed_text),
         or_dash(c.predicted.mfu, percent_text), or_dash(c.measured.mfu, percent_text),
         or_dash(c.error.mfu, signed_text), or_dash(c.predicted.tflops_per_gpu, tflops_text),
         or_dash(c.measured.tflops_per_gpu, tflops_text),
         or_dash(c.error.tflops_per_gpu, signed_text),
         c.measured.memory_peak_gib ? gib_text(*c.predicted.memory_peak_gib) : "-",
         or_dash(c.measured.memory_peak_gib, gib_text),
         or_dash(c.error.memory_peak_gib, signed_text), c.report->memory_fits ? "yes" : "NO"});
  }
  out += format_columns(rows, "L");

  if (summary.failed > 0) {
    out += "\nFailed cases\n";
    for (const CaseOutcome& c : summary.cases) {
      if (!c.report) out += "  " + c.id + ": " + c.error_message + "\n";
    }
  }

  const auto count = [&](std::optional<double> RunValues::*key) {
    size_t n = 0;
    for (const CaseOutcome& c : summary.cases) n += (c.error.*key).has_value() ? 1 : 0;
    return n;
  };
  const auto mape_line = [&](const char* label, const std::optional<double>& mape, size_t n) {
    return std::vector<std::string>{
        label, mape ? format_percent(*mape) : "-",
        mape ? "over " + std::to_string(n) + " cases" : "no case measured it"};
  };
  std::vector<std::vector<std::string>> stats;
  stats.push_back(
      mape_line("  MAPE step time", summary.mape_step_time, count(&RunValues::step_time_s)));
  stats.push_back({"  median |error| step time",
                   summary.median_abs_error_step_time
                       ? format_percent(*summary.median_abs_error_step_time)
                       : "-",
                   ""});
  stats.push_back(mape_line("  MAPE TFLOP/s per GPU", summary.mape_tflops_per_gpu,
                            count(&RunValues::tflops_per_gpu)));
  stats.push_back(mape_line("  MAPE MFU", summary.mape_mfu, count(&RunValues::mfu)));
  stats.push_back(
      mape_line("  MAPE memory", summary.mape_memory, count(&RunValues::memory_peak_gib)));
  stats.push_back({"  step time within 10%", std::to_string(summary.step_time_within_10pct),
                   "of " + std::to_string(count(&RunValues::step_time_s)) + " cases"});
  stats.push_back({"  plans that do not fit in memory", std::to_string(summary.not_fitting),
                   "of " + std::to_string(summary.cases.size() - summary.failed) +
                       " simulated (fits NO: more than the GPU holds as written, so an input its "
                       "source did not print, e.g. recompute or offload, or podsim over-counts)"});
  out += "\nSummary: " + std::to_string(summary.cases.size()) + " cases, " +
         std::to_string(summary.cases.size() - summary.failed) + " simulated, " +
         std::to_string(summary.failed) + " failed\n";
  out += format_columns(stats, "LRL");

  // Step-time errors by family and by software preset (TFLOP/s or MFU
  // errors turned into step-time sense where no step time was measured).
  const auto group_table = [&](const char* title, const std::vector<GroupStats>& groups) {
    if (groups.empty()) return;
    out += std::string("\n") + title + "\n";
    std::vector<std::vector<std::string>> table;
    table.push_back({"  NAME", "cases", "MAPE", "mean error", "within 10%"});
    for (const GroupStats& g : groups) {
      table.push_back({"  " + g.name, std::to_string(g.cases), format_percent(g.mape),
                       signed_percent(g.mean_signed), std::to_string(g.within_10pct)});
    }
    out += format_columns(table, "LRRRR");
  };
  group_table("By family (step-time sense)", summary.families);
  group_table("By software preset (step-time sense)", summary.software);

  const std::vector<size_t> worst = worst_cases(summary, 5);
  if (!worst.empty()) {
    out += "\nWorst cases\n";
    std::vector<std::vector<std::string>> lines;
    std::vector<std::string> dominants;
    for (const size_t i : worst) {
      const CaseOutcome& c = summary.cases[i];
      const char* key = c.error.step_time_s      ? "step time"
                        : c.error.tflops_per_gpu ? "TFLOP/s"
                                                 : "MFU";
      const double error = c.error.step_time_s      ? *c.error.step_time_s
                           : c.error.tflops_per_gpu ? *c.error.tflops_per_gpu
                                                    : *c.error.mfu;
      const auto [term, seconds] = dominant_term(*c.report);
      const double step = c.report->step_time_s > 0 ? c.report->step_time_s : 1.0;
      lines.push_back({"  " + c.id, key, signed_percent(error)});
      dominants.push_back("  dominant: " + term + " (" + format_percent(seconds / step) +
                          " of the step)");
    }
    const std::string table = format_columns(lines, "LLR");
    size_t start = 0;
    for (const std::string& dominant : dominants) {
      const size_t end = table.find('\n', start);
      out += table.substr(start, end - start) + dominant + "\n";
      start = end + 1;
    }
  }
  out += format_repeated_scenarios(summary);
  return out;
}

}  // namespace podsim::scenarios
