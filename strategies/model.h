#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace podsim::strategies {

enum class MlpKind : uint8_t { kGelu, kSwiglu };
enum class NormKind : uint8_t { kLayerNorm, kRmsNorm };

/// How the routed experts' load is spread (scenario format 1.2).
enum class LoadBalance : uint8_t {
  /// Benchmarks' forced balance: Megatron's moe_router_force_load_balancing
  /// replaces the router logits by i.i.d. normal draws, so every token picks
  /// top_k experts uniformly at random; expert loads are multinomial.
  kForced,
  /// A trained router: the sampling noise of kForced plus a persistent
  /// per-expert skew (moe_imbalance.h).
  kLearned,
};

/// How a trained router is kept balanced, which sets its persistent skew.
enum class RouterBalancing : uint8_t {
  kAuxLoss,   ///< an auxiliary balance loss (Mixtral, Qwen3, Llama 4, gpt-oss)
  kLossFree,  ///< DeepSeek-V3's auxiliary-loss-free expert bias
};

/// Mixture-of-experts MLP (replaces the dense MLP of its layers).
struct MoeShape {
  int64_t experts = 0;
  int64_t top_k = 0;
  int64_t ffn_hidden = 0;  ///< per expert
  int64_t shared_experts = 0;
  /// Leading layers with a dense MLP of model.ffn_hidden (DeepSeek-V3: 3).
  int64_t dense_layers = 0;
  /// Every n-th layer is MoE (HF: layers n-1, 2n-1, ...), the rest dense.
  int64_t interleave_step = 1;
  LoadBalance load_balance = LoadBalance::kLearned;
  RouterBalancing balancing = RouterBalancing::kAuxLoss;
  /// Largest global load imbalance of a trained router (MaxVio_global =
  /// max_i load_i / mean - 1); unset: the published value for `balancing`.
  std::optional<double> max_violation = std::nullopt;
  /// Tokens an expert takes, as a multiple of its even share; unset = dropless.
  std::optional<double> capacity_factor = std::nullopt;
  /// Group-limited routing (DeepSeek-V3 n_group 8, topk_group 4): experts
  /// form `expert_groups` consecutive groups and a token's top_k lie in at
  /// most `groups_per_token` of them (0 = no limit). With one group per node
  /// it bounds the nodes a token is sent to ("node-limited routing").
  int64_t expert_groups = 1;
  int64_t groups_per_token = 0;
  /// The router's gating GEMM in fp32 (Megatron moe_router_dtype=fp32, as
  /// Megatron-Bridge sets for DeepSeek-V3), else in the activation format.
  bool router_fp32 = false;
};

enum class AttentionKind : uint8_t { kMha, kGqa, kMla };

/// Multi-head latent attention (DeepSeek-V2/V3): queries and keys/values are
/// projected down to low-rank latents, normalised, and up again per head;
/// the RoPE part of the keys (qk_rope_head_dim) is shared by all heads.
struct MlaShape {
  int64_t q_lora_rank = 0;  ///< 0: queries projected directly from the hidden state
  int64_t kv_lora_rank = 0;
  int64_t qk_rope_head_dim = 0;
  int64_t qk_nope_head_dim = 0;
  int64_t v_head_dim = 0;
  int64_t qk_head_dim() const { return qk_nope_head_dim + qk_rope_head_dim; }
};

/// The attention of the layers (scenario format 1.2 `model.attention`).
struct AttentionSpec {
  AttentionKind kind = AttentionKind::kGqa;
  MlaShape mla;  ///< kind == kMla
  /// Sliding-window attention: a query sees the last `sliding_window` keys
  /// (itself included); 0 = full causal attention.
  int64_t sliding_window = 0;
  /// Layers i with i % sliding_window_every == 0 use the window (gpt-oss: 2,
  /// layer 0 sliding); 1 = every layer.
  int64_t sliding_window_every = 1;
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
  /// The SwiGLU clamps its gate half from above and its linear half on both
  /// sides before the activation (gpt-oss, swiglu_limit 7).
  bool clamped_glu = false;
  std::optional<MoeShape> moe;
  AttentionSpec attention;
  /// Multi-token-prediction modules after the last layer (DeepSeek-V3: 1):
  /// each an embedding of the shifted tokens, two norms, a 2h -> h
  /// projection, one transformer layer and the shared output layer + loss.
  int64_t mtp_layers = 0;
  std::string source;
};

}  // namespace podsim::strategies
