#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace podsim::strategies {

enum class MlpKind : uint8_t { kGelu, kSwiglu };
enum class NormKind : uint8_t { kLayerNorm, kRmsNorm };

/// Mixture-of-experts MLP (replaces the dense MLP of every layer).
struct MoeShape {
  int64_t experts = 0;
  int64_t top_k = 0;
  int64_t ffn_hidden = 0;  ///< per expert
  int64_t shared_experts = 0;
};

/// The transformer being trained (decoder-only).
struct ModelShape {
  std::string name;
  int64_t layers = 0;
  int64_t hidden = 0;
  int64_t ffn_hidden = 0;
  int64_t heads = 0;
  int64_t kv_heads = 0;  ///< grouped-query attention; == heads for MHA
  int64_t head_dim = 0;  ///< usually hidden / heads
  int64_t vocab = 0;
  MlpKind mlp = MlpKind::kSwiglu;
  NormKind norm = NormKind::kRmsNorm;
  bool tied_embeddings = false;
  std::optional<MoeShape> moe;
  std::string source;
};

}  // namespace podsim::strategies
