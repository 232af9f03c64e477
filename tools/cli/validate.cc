// podsim validate FILE [--json] [--profile FILE]
#include <ostream>

#include "calibration/profile.h"
#include "scenarios/report/validation_report.h"
#include "scenarios/step/simulate.h"
#include "scenarios/validate/validation.h"
#include "tools/cli/commands.h"

namespace podsim::cli {

namespace po = boost::program_options;

int validate_command(const std::vector<std::string>& args, CommandIo& io) {
  po::options_description visible;
  visible.add_options()("json", "print the results as one JSON object")(
      "profile", po::value<std::string>()->value_name("FILE"),
      "calibration profile to use instead of datasheet efficiency curves");
  po::options_description hidden;
  hidden.add_options()("file", po::value<std::string>()->required(), "validation-case file");
  po::positional_options_description positional;
  positional.add("file", 1);
  po::variables_map values;
  if (const std::optional<int> status = parse_arguments(
          "validate", "podsim validate FILE [--json] [--profile FILE]",
          "Simulates every case of a validation-case file (scenario-format.md, \"Validation "
          "cases\") and compares with what was measured: step time, MFU, TFLOP/s per GPU and "
          "memory, signed relative errors (predicted/measured - 1), MAPE per key and the worst "
          "cases with the dominant term of their step. A case that cannot be read or simulated "
          "is listed with its error and the others still run; the exit status is then 2.",
          visible, hidden, positional, args, values, io)) {
    return *status;
  }
  const std::string file = values["file"].as<std::string>();
  scenarios::Result<std::vector<scenarios::ValidationCase>> cases =
      scenarios::read_validation_file(file);
  if (!cases.ok()) {
    print_problems(io.err, file, cases.problems());
    return kExitBadInput;
  }
  for (const scenarios::ValidationCase& c : cases.value()) {
    print_problems(io.err, file, c.problems);
  }
  scenarios::SimulateOptions options;
  if (values.count("profile") != 0) {
    options.profile_path = values["profile"].as<std::string>();
    // One unreadable profile is one problem, said once: not the same failure
    // in every case of the table.
    try {
      (void)calibration::read_profile(options.profile_path);
    } catch (const calibration::ProfileError& e) {
      io.err << "podsim validate: --profile: " << e.what() << "\n";
      return kExitBadInput;
    }
  }
  const scenarios::ValidationSummary summary = scenarios::run_validation(
      cases.value(),
      [&](const scenarios::ScenarioSpec& spec) { return scenarios::simulate(spec, options); });
  io.out << (values.count("json") != 0 ? scenarios::validation_json_text(summary)
                                       : scenarios::format_validation_text(summary));
  return summary.failed == 0 ? kExitOk : kExitBadInput;
}

}  // namespace podsim::cli
