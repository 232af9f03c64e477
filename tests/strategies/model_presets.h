#pragma once

// Model shapes for the strategies tests, which cannot use the scenario
// reader's presets (scenarios/input/presets/models.json, the product's single
// source): the same dimensions, from ../shared/reference/hardware.md
// section 5, written as code.
#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "strategies/model.h"

namespace podsim::strategies::testing {

inline ModelShape llama(std::string name, int64_t layers, int64_t hidden, int64_t ffn,
                        int64_t heads, int64_t kv, int64_t vocab, std::string source) {
  ModelShape m;
  m.name = std::move(name);
  m.layers = layers;
  m.hidden = hidden;
  m.ffn_hidden = ffn;
  m.heads = heads;
  m.kv_heads = kv;
  m.head_dim = hidden / heads;
  m.vocab = vocab;
  m.mlp = MlpKind::kSwiglu;
  m.norm = NormKind::kRmsNorm;
  m.tied_embeddings = false;
  m.source = std::move(source);
  return m;
}

inline ModelShape make(std::string_view name) {
  if (name == "gpt3-175b") {
    ModelShape m;
    m.name = "gpt3-175b";
    m.layers = 96;
    m.hidden = 12288;
    m.ffn_hidden = 4 * 12288;
    m.heads = 96;
    m.kv_heads = 96;
    m.head_dim = 128;
    m.vocab = 50257;  // GPT-2 BPE (hardware.md: unverified)
    m.mlp = MlpKind::kGelu;
    m.norm = NormKind::kLayerNorm;
    m.tied_embeddings = true;
    m.source = "Brown et al. 2020 (GPT-3) Table 2.1; hardware.md section 5 [S48]";
    return m;
  }
  if (name == "llama2-7b") {
    return llama("llama2-7b", 32, 4096, 11008, 32, 32, 32000,
                 "Llama 2 HF config; hardware.md [S47]");
  }
  if (name == "llama2-70b") {
    return llama("llama2-70b", 80, 8192, 28672, 64, 8, 32000,
                 "Llama 2 HF config; hardware.md [S47]");
  }
  if (name == "llama3-8b") {
    return llama("llama3-8b", 32, 4096, 14336, 32, 8, 128256,
                 "Llama 3 herd paper Table 3, llama-models; hardware.md [S35][S46]");
  }
  if (name == "llama3-70b") {
    return llama("llama3-70b", 80, 8192, 28672, 64, 8, 128256,
                 "Llama 3 herd paper Table 3, llama-models; hardware.md [S35][S46]");
  }
  if (name == "llama3-405b") {
    return llama("llama3-405b", 126, 16384, 53248, 128, 8, 128256,
                 "Llama 3 herd paper Table 3, llama-models; hardware.md [S35][S46]");
  }
  if (name == "mixtral-8x7b") {
    ModelShape m = llama("mixtral-8x7b", 32, 4096, 14336, 32, 8, 32000,
                         "Mixtral of Experts (Jiang et al. 2024); hardware.md [S49]");
    m.moe = MoeShape{8, 2, 14336, 0};
    return m;
  }
  if (name == "deepseek-v3") {
    ModelShape m = llama("deepseek-v3", 61, 7168, 18432, 128, 128, 129280,
                         "DeepSeek-V3 report section 4.2, HF config.json");
    m.moe = MoeShape{256, 8, 2048, 1};
    m.moe->dense_layers = 3;
    m.moe->balancing = RouterBalancing::kLossFree;
    m.moe->expert_groups = 8;
    m.moe->groups_per_token = 4;
    m.attention.kind = AttentionKind::kMla;
    m.attention.mla = {1536, 512, 64, 128, 128};
    m.mtp_layers = 1;
    return m;
  }
  if (name == "gpt-oss-120b") {
    ModelShape m =
        llama("gpt-oss-120b", 36, 2880, 2880, 64, 8, 201088, "HF openai/gpt-oss-120b config.json");
    m.head_dim = 64;
    m.clamped_glu = true;
    m.moe = MoeShape{128, 4, 2880, 0};
    m.attention.sliding_window = 128;
    m.attention.sliding_window_every = 2;
    return m;
  }
  return {};
}

constexpr std::array<std::string_view, 9> kNames{"gpt3-175b",    "llama2-7b",   "llama2-70b",
                                                 "llama3-8b",    "llama3-70b",  "llama3-405b",
                                                 "mixtral-8x7b", "deepseek-v3", "gpt-oss-120b"};

inline std::optional<ModelShape> model_preset(std::string_view name) {
  for (std::string_view n : kNames) {
    if (n == name) return make(name);
  }
  return std::nullopt;
}

inline std::vector<std::string_view> model_preset_names() { return {kNames.begin(), kNames.end()}; }

}  // namespace podsim::strategies::testing
