#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "strategies/model.h"

namespace podsim::strategies {

/// A model preset by name (gpt3-175b, llama2-7b, llama2-70b, llama3-8b,
/// llama3-70b, llama3-405b, mixtral-8x7b), or nullopt. Dimensions from
/// /work/shared/reference/hardware.md section 5 (sources in `source`).
std::optional<ModelShape> model_preset(std::string_view name);
/// Names of all model presets, in a fixed order.
std::vector<std::string_view> model_preset_names();

}  // namespace podsim::strategies
