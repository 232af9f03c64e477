// podsim describe [--json]
#include <ostream>

#include "scenarios/input/schema.h"
#include "tools/cli/commands.h"

namespace podsim::cli {

namespace po = boost::program_options;

int describe_command(const std::vector<std::string>& args, CommandIo& io) {
  po::options_description visible;
  visible.add_options()("json", "print the declarations as JSON");
  const po::options_description hidden;
  const po::positional_options_description positional;
  po::variables_map values;
  if (const std::optional<int> status = parse_arguments(
          "describe", "podsim describe [--json]",
          "Prints every key of the scenario and validation-case formats from the declarations "
          "the reader checks with: type, unit, default, allowed values and meaning.",
          visible, hidden, positional, args, values, io)) {
    return *status;
  }
  io.out << (values.count("json") != 0 ? scenarios::describe_json_text()
                                       : scenarios::describe_text());
  return kExitOk;
}

}  // namespace podsim::cli
