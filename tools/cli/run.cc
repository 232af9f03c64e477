// podsim run [FILE] [--json] [--every-rank] [--profile FILE] [--trace FILE] [--timeline FILE]
//            [--require-fit]
#include <fstream>
#include <nlohmann/json.hpp>
#include <ostream>

#include "scenarios/input/quantity.h"
#include "scenarios/input/reader.h"
#include "scenarios/report/report_format.h"
#include "scenarios/report/run_report_format.h"
#include "scenarios/report/timeline_svg.h"
#include "scenarios/report/trace.h"
#include "scenarios/run/simulate_run.h"
#include "scenarios/step/simulate.h"
#include "tools/cli/commands.h"

namespace podsim::cli {

namespace po = boost::program_options;

int run_command(const std::vector<std::string>& args, CommandIo& io) {
  po::options_description visible;
  visible.add_options()("json", "print the report as one JSON object (the contract's keys)")(
      "every-rank", "simulate every GPU on its own instead of one per pipeline stage")(
      "profile", po::value<std::string>()->value_name("FILE"),
      "calibration profile to use instead of datasheet efficiency curves")(
      "trace", po::value<std::string>()->value_name("FILE"),
      "also write the step as a Chrome/Perfetto trace (JSON; open in ui.perfetto.dev)")(
      "timeline", po::value<std::string>()->value_name("FILE"),
      "also write the pipeline schedule and memory over time as an SVG picture")(
      "require-fit",
      "exit with status 5 (after the same report) when the plan does not fit in GPU memory");
  po::variables_map values;
  if (const std::optional<int> status = parse_file_arguments(
          "run",
          "podsim run [FILE] [--json] [--every-rank] [--profile FILE] [--trace FILE] "
          "[--timeline FILE] [--require-fit]",
          "Simulates one optimizer step of the scenario in FILE (scenario-format.md) and prints "
          "the report. Without FILE, runs the built-in default: Llama 3 405B on 16,384 H100 of "
          "the llama3-24k cluster (TP8 CP1 PP16 DP128, seq 8192).",
          visible, args, values, io)) {
    return *status;
  }

  const bool has_file = values.count("file") != 0;
  const std::string label =
      has_file ? values["file"].as<std::string>() : std::string(scenarios::kDefaultScenarioLabel);
  scenarios::Result<scenarios::ScenarioSpec> spec =
      has_file ? scenarios::read_scenario_file(label) : scenarios::read_default_scenario();
  if (!spec.ok()) {
    print_problems(io.err, label, spec.problems());
    return kExitBadInput;
  }
  print_input_warnings(io.err, label, spec.value().input_warnings);

  scenarios::SimulateOptions options;
  if (values.count("every-rank") != 0) options.mode = scenarios::SimulationMode::kEveryRank;
  if (values.count("profile") != 0) options.profile_path = values["profile"].as<std::string>();
  const std::string trace_path =
      values.count("trace") != 0 ? values["trace"].as<std::string>() : std::string();
  const std::string timeline_path =
      values.count("timeline") != 0 ? values["timeline"].as<std::string>() : std::string();
  scenarios::Result<scenarios::Report> report = std::vector<scenarios::Problem>{};
  if (trace_path.empty() && timeline_path.empty()) {
    report = scenarios::simulate(spec.value(), options);
  } else {
    // The pictures need the schedule and the task times behind the report.
    scenarios::Result<scenarios::StepDetail> detail =
        scenarios::simulate_detailed(spec.value(), options);
    if (!detail.ok()) {
      print_problems(io.err, label, detail.problems());
      return kExitBadInput;
    }
    auto write = [&](const std::string& path, auto writer) {
      std::ofstream file(path, std::ios::binary);
      if (file) writer(file);
      file.close();
      if (!file) io.err << "podsim run: cannot write " << path << "\n";
      return static_cast<bool>(file);
    };
    if (!trace_path.empty() && !write(trace_path, [&](std::ostream& o) {
          scenarios::write_chrome_trace(o, detail.value());
        })) {
      return kExitBadInput;
    }
    if (!timeline_path.empty() && !write(timeline_path, [&](std::ostream& o) {
          o << scenarios::timeline_svg(detail.value());
        })) {
      return kExitBadInput;
    }
    report = std::move(detail.value().report);
  }
  if (!report.ok()) {
    print_problems(io.err, label, report.problems());
    return kExitBadInput;
  }
  const scenarios::Report& result = report.value();
  const bool json = values.count("json") != 0;
  // The report is printed either way; only the status says "does not fit".
  auto fit_status = [&] {
    if (values.count("require-fit") == 0 || result.memory_fits) return kExitOk;
    io.err << "podsim run: " << label << ": the plan does not fit: "
           << scenarios::format_bytes(result.memory_device_peak_bytes) << " of "
           << scenarios::format_bytes(result.memory_capacity_bytes)
           << " per GPU at the peak (--require-fit)\n";
    return kExitDoesNotFit;
  };
  const std::optional<double> tokens = spec.value().run.tokens;
  if (!tokens) {
    io.out << (json ? scenarios::report_json_text(result) : scenarios::format_report_text(result));
    return fit_status();
  }
  // A token budget: the whole run above the step.
  scenarios::Result<scenarios::RunReport> run =
      scenarios::simulate_run(spec.value(), result, *tokens, options);
  if (!run.ok()) {
    print_problems(io.err, label, run.problems());
    return kExitBadInput;
  }
  if (json) {
    nlohmann::json out = scenarios::report_to_json(result);
    out["run"] = scenarios::run_report_to_json(run.value());
    io.out << out.dump(2) << "\n";
  } else {
    io.out << scenarios::format_report_text(result) << "\n"
           << scenarios::format_run_report_text(run.value());
  }
  return fit_status();
}

}  // namespace podsim::cli
