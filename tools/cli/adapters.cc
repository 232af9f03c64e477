// Subcommands written argc/argv-style in their own files (collective.cc,
// calibrate.cc), adapted to the subcommand table, with the hooks that give
// them the scenario layer's presets and unit parser.
#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "calibration/profile.h"
#include "scenarios/input/quantity.h"
#include "scenarios/input/reader.h"
#include "scenarios/input/suggest.h"
#include "scenarios/step/profile_fit.h"
#include "scenarios/step/step_limits.h"
#include "tools/cli/calibrate.h"
#include "tools/cli/collective.h"
#include "tools/cli/commands.h"

namespace podsim::cli {

namespace {

/// argv for an argc/argv command: its name, then the arguments.
class Argv {
 public:
  Argv(const char* name, const std::vector<std::string>& args) : strings_(args) {
    strings_.insert(strings_.begin(), name);
    for (std::string& s : strings_) pointers_.push_back(s.data());
    pointers_.push_back(nullptr);
  }
  int argc() const { return static_cast<int>(strings_.size()); }
  char** argv() { return pointers_.data(); }

 private:
  std::vector<std::string> strings_;
  std::vector<char*> pointers_;
};

std::optional<hwmodels::ClusterSpec> cluster_preset(const std::string& name, std::string& error) {
  const scenarios::Result<hwmodels::ClusterSpec> cluster =
      scenarios::read_cluster_json(nlohmann::json(name));
  if (cluster.ok()) return cluster.value();
  for (const scenarios::Problem& problem : cluster.problems()) {
    if (!error.empty()) error += "; ";
    error += problem.to_string();
  }
  return std::nullopt;
}

/// "8" (bytes) or a size with a unit ("1GiB", "512 MB"): finite, >= 0 (-0 is 0).
std::optional<double> size_in_bytes(const std::string& text, std::string& error) {
  double bytes = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), bytes);
  if (ec != std::errc() || end != text.data() + text.size()) {
    const scenarios::Result<scenarios::Quantity> quantity = scenarios::parse_quantity(text);
    if (!quantity.ok()) {
      error = quantity.problems().front().message;
      return std::nullopt;
    }
    if (quantity.value().dimension != scenarios::Dimension::kBytes) {
      error = scenarios::quote_for_message(text) + " is " +
              std::string(scenarios::dimension_name(quantity.value().dimension)) +
              ", expected a size like '1 GiB'";
      return std::nullopt;
    }
    bytes = quantity.value().value;
  }
  if (!std::isfinite(bytes) || bytes < 0) {
    error = scenarios::quote_for_message(text) +
            " is not a size: give a finite number of bytes "
            ">= 0, like '1 GiB'";
    return std::nullopt;
  }
  return bytes == 0 ? 0.0 : bytes;
}

/// --profile: the scale-up links the profile measured.
bool apply_profile(const std::string& path, hwmodels::ClusterSpec& cluster,
                   std::vector<std::string>& notes, std::string& error) {
  try {
    notes = scenarios::apply_scale_up_profile(calibration::read_profile(path), cluster);
    return true;
  } catch (const calibration::ProfileError& e) {
    error = e.what();
    return false;
  }
}

}  // namespace

int collective_command(const std::vector<std::string>& args, CommandIo& io) {
  Argv argv("collective", args);
  CollectiveCliHooks hooks;
  hooks.cluster = cluster_preset;
  hooks.bytes = size_in_bytes;
  hooks.profile = apply_profile;
  hooks.clock_limit = scenarios::clock_limit_text();
  return run_collective_command(argv.argc(), argv.argv(), hooks, io.out, io.err);
}

int calibrate_command(const std::vector<std::string>& args, CommandIo& io) {
  (void)io;  // calibrate prints to the standard streams itself
  Argv argv("calibrate", args);
  return tools::run_calibrate_command(argv.argc(), argv.argv());
}

}  // namespace podsim::cli
