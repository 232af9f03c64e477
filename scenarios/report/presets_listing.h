#pragma once

#include <string>

#include "scenarios/input/presets.h"

namespace podsim::scenarios {

/// `podsim presets`: every preset with its key numbers, aligned columns.
std::string presets_text(const PresetLibrary& presets);
/// `podsim presets --json`: the preset data as one JSON document.
std::string presets_json_text(const PresetLibrary& presets);

}  // namespace podsim::scenarios
