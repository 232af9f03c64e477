#pragma once

#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "hwmodels/cluster_spec.h"

namespace podsim::cli {

/// What `podsim collective` takes from the rest of the CLI. scenarios/ owns
/// the cluster presets and the unit-string parser; main.cc passes them here.
struct CollectiveCliHooks {
  /// --cluster NAME -> spec; on failure nullopt and `error` says why.
  std::function<std::optional<hwmodels::ClusterSpec>(const std::string& name, std::string& error)>
      cluster;
  /// "1GiB", "512MB", "8" -> bytes; on failure nullopt and `error` says why.
  std::function<std::optional<double>(const std::string& text, std::string& error)> bytes;
  /// --profile PATH: applies a calibration profile to the cluster (notes say
  /// what changed); false and `error` when the profile cannot be read.
  std::function<bool(const std::string& path, hwmodels::ClusterSpec& cluster,
                     std::vector<std::string>& notes, std::string& error)>
      profile;
  /// The longest time the simulation's clock holds, in words ("about 106 days").
  std::string clock_limit;
};

/// `podsim collective --cluster PRESET [--op all_reduce] [--bytes 1GiB]
/// [--gpus N] [--algo auto|ring|tree|hierarchical|nvls|direct] [--json]
/// [--sweep [--min-bytes 8] [--max-bytes 8GiB]] [--profile FILE]`; argv[0] is
/// "collective". Every hook must be set.
/// Prints time, algbw and busbw (nccl-tests definitions), or an nccl-tests
/// style table with --sweep. Exit status: 0 ok, 2 bad input (message on
/// `err`: a size or cluster the simulation cannot take, or a collective
/// longer than its clock holds).
int run_collective_command(int argc, char** argv, const CollectiveCliHooks& hooks,
                           std::ostream& out, std::ostream& err);

}  // namespace podsim::cli
