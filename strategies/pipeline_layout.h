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

/// The named layout "asym-embed-loss": Megatron's
/// account_for_embedding_in_pipeline_split and account_for_loss_in_pipeline_split
/// (NVIDIA's MLPerf Llama 3.1 405B configs: ASYM_PP_EMBED, ASYM_PP_LOSS) count
/// the embedding and the loss as one layer each, so `layers + 2` slots split
/// evenly over `chunks` model chunks; the first chunk holds the embedding and
/// one layer fewer, the last the loss (and the `mtp` modules) and one fewer.
inline constexpr std::string_view kAsymEmbedLossLayout = "asym-embed-loss";
/// Its chunks, or empty when `layers + 2` is not a multiple of `chunks`.
std::vector<ChunkLayout> asym_embed_loss_layout(int64_t layers, int64_t chunks, int64_t mtp);

}  // namespace podsim::strategies
