#include "scenarios/validate/validation.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "calibration/fit.h"
#include "scenarios/input/checker.h"
#include "scenarios/input/json_text.h"
#include "scenarios/input/schema.h"

namespace podsim::scenarios {

using nlohmann::json;

namespace {

/// "/cases/12/scenario/x" -> 12; nullopt for paths outside a case.
std::optional<size_t> case_index(const std::string& path) {
  const std::string prefix = "/cases/";
  if (path.rfind(prefix, 0) != 0) return std::nullopt;
  const size_t end = path.find('/', prefix.size());
  const std::string digits = path.substr(
      prefix.size(), end == std::string::npos ? std::string::npos : end - prefix.size());
  if (digits.empty() || digits.size() > 9 ||
      digits.find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  return static_cast<size_t>(std::stoul(digits));
}

std::optional<double> value_at(const CheckedDocument& doc, const std::string& path) {
  const auto it = doc.values.find(path);
  if (it == doc.values.end()) return std::nullopt;
  if (const double* v = std::get_if<double>(&it->second)) return *v;
  return std::nullopt;
}

std::string text_at(const CheckedDocument& doc, const std::string& path) {
  const auto it = doc.values.find(path);
  if (it == doc.values.end()) return "";
  if (const std::string* v = std::get_if<std::string>(&it->second)) return *v;
  return "";
}

std::optional<double> relative_error(const std::optional<double>& predicted,
                                     const std::optional<double>& measured) {
  if (!predicted || !measured || *measured == 0) return std::nullopt;
  return *predicted / *measured - 1.0;
}

std::optional<double> mean_abs(const std::vector<double>& errors) {
  if (errors.empty()) return std::nullopt;
  double sum = 0;
  for (const double e : errors) sum += std::fabs(e);
  return sum / static_cast<double>(errors.size());
}

}  // namespace

Result<std::vector<ValidationCase>> read_validation_text(std::string_view text,
                                                         const ReadOptions& options) {
  Result<json> parsed = parse_json_text(text, options.limits);
  if (!parsed.ok()) return parsed.problems();
  const json& document = parsed.value();
  const PresetLibrary& presets = options.presets ? *options.presets : builtin_presets();

  std::vector<Problem> problems;
  std::map<std::string, const json*> scenarios;  // path -> node, read once ids are known
  const Checker checker(validation_keys(), presets, "");
  const CheckedDocument doc =
      checker.check(document, problems,
                    [&](const json& node, const std::string& path) { scenarios[path] = &node; });

  const auto size = doc.array_sizes.find("/cases");
  std::vector<Problem> file_problems;
  std::vector<ValidationCase> cases(size == doc.array_sizes.end() ? 0 : size->second);
  for (Problem& problem : problems) {
    const std::optional<size_t> index = case_index(problem.path);
    if (index && *index < cases.size()) {
      cases[*index].problems.push_back(std::move(problem));
    } else {
      file_problems.push_back(std::move(problem));
    }
  }
  if (!file_problems.empty()) return file_problems;

  std::map<std::string, size_t> first_with_id;
  for (size_t i = 0; i < cases.size(); ++i) {
    ValidationCase& c = cases[i];
    const std::string base = "/cases/" + std::to_string(i);
    c.id = text_at(doc, base + "/id");
    c.source = text_at(doc, base + "/source");
    c.notes = text_at(doc, base + "/notes");
    c.measured.step_time_s = value_at(doc, base + "/measured/step_time_s");
    c.measured.tflops_per_gpu = value_at(doc, base + "/measured/tflops_per_gpu");
    c.measured.mfu = value_at(doc, base + "/measured/mfu");
    c.measured.memory_peak_gib = value_at(doc, base + "/measured/memory_peak_gib");
    if (!c.id.empty()) {
      const auto [it, inserted] = first_with_id.emplace(c.id, i);
      if (!inserted) {
        c.problems.push_back(
            {base + "/id", "duplicate id '" + c.id + "'",
             "also /cases/" + std::to_string(it->second) + "/id; ids must be unique"});
      }
    }
    const auto scenario = scenarios.find(base + "/scenario");
    if (scenario != scenarios.end()) {
      ReadOptions case_options = options;
      case_options.default_name = c.id.empty() ? "case " + std::to_string(i) : c.id;
      Result<ScenarioSpec> spec =
          read_scenario_json(*scenario->second, case_options, base + "/scenario");
      if (spec.ok()) {
        if (c.problems.empty()) c.scenario = std::move(spec).value();
        if (scenario->second->is_object()) {
          json as_written = *scenario->second;
          as_written.erase("name");
          as_written.erase("notes");
          c.scenario_key = as_written.dump();  // object keys sorted: canonical
        }
      } else {
        c.problems.insert(c.problems.end(), spec.problems().begin(), spec.problems().end());
      }
    }
    if (!c.problems.empty()) {
      c.scenario.reset();
      c.scenario_key.clear();
    }
  }
  return cases;
}

Result<std::vector<ValidationCase>> read_validation_file(const std::string& path,
                                                         const ReadOptions& options) {
  Result<std::string> text = read_text_file(path, options.limits);
  if (!text.ok()) return text.problems();
  return read_validation_text(text.value(), options);
}

std::string case_family(std::string_view id) {
  const size_t first = id.find('_');
  const std::string_view head = id.substr(0, first);
  const bool numbered = head.find_first_of("0123456789") != std::string_view::npos;
  if (numbered || first == std::string_view::npos) return std::string(head);
  return std::string(id.substr(0, id.find('_', first + 1)));
}

std::vector<std::vector<size_t>> identical_scenarios(const std::vector<ValidationCase>& cases) {
  std::map<std::string, size_t> group_of_key;
  std::vector<std::vector<size_t>> groups;
  for (size_t i = 0; i < cases.size(); ++i) {
    if (cases[i].scenario_key.empty()) continue;
    const auto [it, inserted] = group_of_key.emplace(cases[i].scenario_key, groups.size());
    if (inserted) groups.emplace_back();
    groups[it->second].push_back(i);
  }
  std::erase_if(groups, [](const std::vector<size_t>& g) { return g.size() < 2; });
  return groups;
}

double RepeatedScenario::best_possible_error() const {
  return (measured_max_s - measured_min_s) / (measured_max_s + measured_min_s);
}

std::optional<double> step_time_error(const CaseOutcome& c) {
  if (c.error.step_time_s) return c.error.step_time_s;
  const std::optional<double> rate = c.error.tflops_per_gpu ? c.error.tflops_per_gpu : c.error.mfu;
  if (!rate) return std::nullopt;
  return 1.0 / (1.0 + *rate) - 1.0;
}

namespace {

/// The groups of identical scenarios whose cases ran and measured the step
/// time (two or more left), widest spread first.
std::vector<RepeatedScenario> repeated_scenarios(const std::vector<ValidationCase>& cases,
                                                 const std::vector<CaseOutcome>& outcomes) {
  std::vector<RepeatedScenario> out;
  for (const std::vector<size_t>& group : identical_scenarios(cases)) {
    RepeatedScenario r;
    for (const size_t i : group) {
      const CaseOutcome& c = outcomes[i];
      if (!c.report || !c.measured.step_time_s) continue;
      const double measured = *c.measured.step_time_s;
      r.measured_min_s = r.cases.empty() ? measured : std::min(r.measured_min_s, measured);
      r.measured_max_s = r.cases.empty() ? measured : std::max(r.measured_max_s, measured);
      r.predicted_s = *c.predicted.step_time_s;
      r.cases.push_back(i);
    }
    if (r.cases.size() >= 2) out.push_back(std::move(r));
  }
  // Widest spread first; equal spreads keep file order.
  std::stable_sort(
      out.begin(), out.end(), [](const RepeatedScenario& a, const RepeatedScenario& b) {
        return a.measured_max_s * b.measured_min_s > b.measured_max_s * a.measured_min_s;
      });
  return out;
}

/// Stats per group name, in name order.
std::vector<GroupStats> group_stats(const std::vector<CaseOutcome>& cases,
                                    std::string CaseOutcome::*key) {
  std::map<std::string, GroupStats> groups;
  for (const CaseOutcome& c : cases) {
    const std::optional<double> e = step_time_error(c);
    if (!e) continue;
    GroupStats& g = groups[c.*key];
    g.name = c.*key;
    ++g.cases;
    g.mape += std::fabs(*e);
    g.mean_signed += *e;
    g.within_10pct += std::fabs(*e) <= 0.1 ? 1 : 0;
  }
  std::vector<GroupStats> out;
  for (auto& [name, g] : groups) {
    g.mape /= static_cast<double>(g.cases);
    g.mean_signed /= static_cast<double>(g.cases);
    out.push_back(g);
  }
  return out;
}

}  // namespace

RunValues predicted_values(const Report& report) {
  RunValues values;
  values.step_time_s = report.step_time_s;
  values.tflops_per_gpu = report.model_tflops_per_gpu;
  values.mfu = report.mfu;
  values.memory_peak_gib = report.memory_peak_bytes / (1024.0 * 1024.0 * 1024.0);
  return values;
}

std::pair<std::string, double> dominant_term(const Report& report) {
  const Breakdown& b = report.breakdown;
  const std::pair<std::string, double> terms[] = {{"compute", b.compute},
                                                  {"recompute", b.recompute},
                                                  {"exposed TP comm", b.exposed_comm.tp},
                                                  {"exposed CP comm", b.exposed_comm.cp},
                                                  {"exposed PP comm", b.exposed_comm.pp},
                                                  {"exposed DP comm", b.exposed_comm.dp},
                                                  {"exposed EP comm", b.exposed_comm.ep},
                                                  {"bubble", b.bubble},
                                                  {"optimizer", b.optimizer}};
  std::pair<std::string, double> best = terms[0];
  for (const auto& term : terms) {
    if (term.second > best.second) best = term;  // first wins ties: deterministic
  }
  return best;
}

ValidationSummary run_validation(const std::vector<ValidationCase>& cases,
                                 const SimulateFn& simulate) {
  ValidationSummary summary;
  std::vector<double> step_errors, tflops_errors, mfu_errors, memory_errors;
  for (const ValidationCase& c : cases) {
    CaseOutcome outcome;
    outcome.id = c.id;
    outcome.family = case_family(c.id);
    if (c.scenario) outcome.software = c.scenario->software.name;
    outcome.measured = c.measured;
    std::vector<Problem> problems = c.problems;
    if (c.scenario) {
      Result<Report> report = simulate(*c.scenario);
      if (report.ok()) {
        outcome.report = std::move(report).value();
      } else {
        problems = report.problems();
      }
    }
    if (!outcome.report) {
      for (const Problem& problem : problems) {
        if (!outcome.error_message.empty()) outcome.error_message += "; ";
        outcome.error_message += problem.to_string();
      }
      if (outcome.error_message.empty()) outcome.error_message = "could not be simulated";
      ++summary.failed;
      summary.cases.push_back(std::move(outcome));
      continue;
    }
    outcome.predicted = predicted_values(*outcome.report);
    summary.not_fitting += outcome.report->memory_fits ? 0 : 1;
    outcome.error.step_time_s =
        relative_error(outcome.predicted.step_time_s, c.measured.step_time_s);
    outcome.error.tflops_per_gpu =
        relative_error(outcome.predicted.tflops_per_gpu, c.measured.tflops_per_gpu);
    outcome.error.mfu = relative_error(outcome.predicted.mfu, c.measured.mfu);
    outcome.error.memory_peak_gib =
        relative_error(outcome.predicted.memory_peak_gib, c.measured.memory_peak_gib);
    if (outcome.error.step_time_s) step_errors.push_back(*outcome.error.step_time_s);
    if (outcome.error.tflops_per_gpu) tflops_errors.push_back(*outcome.error.tflops_per_gpu);
    if (outcome.error.mfu) mfu_errors.push_back(*outcome.error.mfu);
    if (outcome.error.memory_peak_gib) memory_errors.push_back(*outcome.error.memory_peak_gib);
    summary.cases.push_back(std::move(outcome));
  }
  for (const double e : step_errors) summary.step_time_within_10pct += std::fabs(e) <= 0.1 ? 1 : 0;
  summary.families = group_stats(summary.cases, &CaseOutcome::family);
  summary.software = group_stats(summary.cases, &CaseOutcome::software);
  summary.repeated = repeated_scenarios(cases, summary.cases);
  summary.mape_step_time = mean_abs(step_errors);
  summary.mape_tflops_per_gpu = mean_abs(tflops_errors);
  summary.mape_mfu = mean_abs(mfu_errors);
  summary.mape_memory = mean_abs(memory_errors);
  if (!step_errors.empty()) {
    std::vector<double> magnitudes;
    for (const double e : step_errors) magnitudes.push_back(std::fabs(e));
    summary.median_abs_error_step_time = calibration::median(magnitudes);
  }
  return summary;
}

std::vector<size_t> worst_cases(const ValidationSummary& summary, size_t count) {
  std::vector<std::pair<double, size_t>> ranked;
  for (size_t i = 0; i < summary.cases.size(); ++i) {
    const RunValues& e = summary.cases[i].error;
    const std::optional<double> error = e.step_time_s      ? e.step_time_s
                                        : e.tflops_per_gpu ? e.tflops_per_gpu
                                                           : e.mfu;
    if (error) ranked.emplace_back(std::fabs(*error), i);
  }
  // Largest error first; equal errors keep file order.
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<size_t> out;
  for (size_t i = 0; i < ranked.size() && i < count; ++i) out.push_back(ranked[i].second);
  return out;
}

}  // namespace podsim::scenarios
