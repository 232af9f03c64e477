#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace podsim::scenarios {

// Facts a sweep needs about a GPU type that the GPU presets do not carry:
// its scale-up link (a sweep that swaps the GPU keeps the cluster's network
// but not its NVLink generation) and a reference rental price.

/// The scale-up link of a GPU type, per GPU and direction, and the fraction
/// NCCL reaches of it.
struct ScaleUpFacts {
  double bw_bytes_per_s = 0;
  double efficiency = 1.0;
  std::string source;
};
/// Known for the NVSwitch GPUs (A100, H100, H200, H800, B200, B300, GB200,
/// GB300); nullopt for others (the cluster's own scale-up is kept then: a
/// mesh GPU or a TPU is compared in its own network through its cluster
/// preset).
std::optional<ScaleUpFacts> scale_up_facts(std::string_view gpu_preset);

/// A reference price in dollars per GPU-hour.
struct GpuPrice {
  double usd_per_gpu_hour = 0;
  std::string source;
};
/// Known for a100-sxm-80g, h100-sxm-80g, h200-sxm-141g and b200; nullopt for
/// others. Rental prices spread 2-3x across providers: these are midpoints
/// of published on-demand ranges, for comparing GPU types, not quotes.
std::optional<GpuPrice> reference_price(std::string_view gpu_preset);

}  // namespace podsim::scenarios
