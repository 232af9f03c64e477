#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "scenarios/input/problem.h"
#include "scenarios/sweep/plan_space.h"

namespace podsim::scenarios {

// The sweep's command-line choices that change which plans it keeps:
// `--fix KEY=VALUE` pins one swept dimension, `--min-headroom` asks for free
// memory on every GPU (docs/sweep.md, "Options").

/// The keys `--fix` takes, in the order docs/sweep.md lists them.
std::vector<std::string> sweep_fix_keys();

/// Applies one `--fix KEY=VALUE` to `space`. A problem (at "--fix") names an
/// unknown key (with the closest one), a value that is not one of the key's
/// values, or a key pinned twice (`already`: the keys pinned so far, by
/// their canonical names; this one is added).
std::optional<Problem> apply_sweep_fix(std::string_view key_value, SweepSpace& space,
                                       std::vector<std::string>& already);

/// Free memory a plan must leave on each GPU.
struct HeadroomRequirement {
  double bytes = 0;     ///< at least this many bytes free
  double fraction = 0;  ///< and at least this fraction of the capacity free
  /// The larger of the two, for a GPU of `capacity_bytes`.
  double required_bytes(double capacity_bytes) const {
    return bytes > fraction * capacity_bytes ? bytes : fraction * capacity_bytes;
  }
};

/// "4GiB", "4 GiB", "512MiB" (a size: bytes), or a fraction of the capacity
/// below 1 ("0.1"). A problem at "--min-headroom" otherwise.
Result<HeadroomRequirement> parse_min_headroom(std::string_view text);

}  // namespace podsim::scenarios
