#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "strategies/plan.h"

namespace podsim::strategies {

// Megatron-Core's pipeline layout string (--pipeline-model-parallel-layout,
// megatron/core/transformer/pipeline_parallel_layer_layout.py): one symbol
// per layer -- 'E' embedding, 't' transformer layer, 'm' multi-token
// prediction module, 'L' final norm + output layer + loss -- and '|' between
// virtual stages, in model order. 'x*n' repeats a symbol and '(...)*n' a
// group: "Et|(tt|)*30L" is the embedding and one layer, 30 stages of two
// layers, and the loss alone. Spaces are ignored.

/// The chunks a layout string describes, or the reason it is not one.
struct ParsedLayout {
  std::vector<ChunkLayout> chunks;
  std::string error;  ///< empty when the string parsed
};
ParsedLayout parse_pipeline_layout(std::string_view text);

/// The chunks for an array of transformer-layer counts per model chunk: the
/// embedding on the first, the loss and `mtp` modules on the last.
std::vector<ChunkLayout> layout_from_counts(const std::vector<int64_t>& counts, int64_t mtp);

}  // namespace podsim::strategies
