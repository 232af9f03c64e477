// podsim presets [--json]
#include <ostream>

#include "scenarios/report/presets_listing.h"
#include "tools/cli/commands.h"

namespace podsim::cli {

namespace po = boost::program_options;

int presets_command(const std::vector<std::string>& args, CommandIo& io) {
  po::options_description visible;
  visible.add_options()("json", "print every preset in full, with its source, as JSON");
  const po::options_description hidden;
  const po::positional_options_description positional;
  po::variables_map values;
  if (const std::optional<int> status = parse_arguments(
          "presets", "podsim presets [--json]",
          "Lists the built-in model, GPU and cluster presets with their key numbers. A scenario "
          "names one by string (\"model\": \"llama3-70b\") or starts from one and overrides "
          "keys ({\"base\": \"dgx-h100-superpod\", \"nodes\": 16}).",
          visible, hidden, positional, args, values, io)) {
    return *status;
  }
  const scenarios::PresetLibrary& presets = scenarios::builtin_presets();
  io.out << (values.count("json") != 0 ? scenarios::presets_json_text(presets)
                                       : scenarios::presets_text(presets));
  return kExitOk;
}

}  // namespace podsim::cli
