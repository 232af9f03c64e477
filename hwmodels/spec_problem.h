#pragma once

#include <string>

namespace podsim::hwmodels {

/// One thing wrong with a hardware description or parameter set. `path` is
/// relative to the object checked ("scale_out/tiers/1/nodes",
/// "gemm_plateau/bf16"); the scenario reader prefixes it with its JSON path.
struct SpecProblem {
  std::string path;
  std::string message;
  std::string hint;
  /// "path: message (hint)"
  std::string to_string() const {
    std::string out = (path.empty() ? std::string("/") : path) + ": " + message;
    if (!hint.empty()) out += " (" + hint + ")";
    return out;
  }
};

}  // namespace podsim::hwmodels
