#include "scenarios/sweep/hardware_facts.h"

namespace podsim::scenarios {

std::optional<ScaleUpFacts> scale_up_facts(std::string_view gpu_preset) {
  // ../shared/reference/hardware.md 1.3 (link rates) and 3.2 (what NCCL
  // reaches). Efficiencies follow the cluster presets: A100 = 8-GPU
  // all-reduce busbw / line rate; H100/H200 = NVIDIA's ~370 GB/s effective.
  if (gpu_preset == "a100-sxm-80g") {
    return ScaleUpFacts{300e9, 231.6 / 300.0,
                        "NVLink3 300 GB/s per direction [S02][S25]; efficiency 231.6/300, "
                        "8x A100 all-reduce busbw (Azure [S27], hardware.md 3.2)"};
  }
  if (gpu_preset == "h100-sxm-80g" || gpu_preset == "h200-sxm-141g") {
    return ScaleUpFacts{450e9, 370.0 / 450.0,
                        "NVLink4 450 GB/s per direction [S25][S13]; efficiency 370/450, NVIDIA's "
                        "effective NVLink bandwidth (nccl-tests #212 [S40], hardware.md 3.2)"};
  }
  if (gpu_preset == "b200" || gpu_preset == "b300" || gpu_preset == "gb200" ||
      gpu_preset == "gb300") {
    return ScaleUpFacts{900e9, 682.2 / 900.0,
                        "NVLink5 900 GB/s per direction [S25][S13]; efficiency 682.2/900, 8x B200 "
                        "ring all-reduce busbw at 8 GiB ([S25], hardware.md 3.2)"};
  }
  if (gpu_preset == "h800-sxm-80g") {
    return ScaleUpFacts{200e9, 0.8,
                        "H800's NVLink4 cut to 8 links, 200 GB/s per direction; efficiency "
                        "160/200, DeepSeek's measured NVLink bandwidth (docs/hardware.md [N16])"};
  }
  return std::nullopt;
}

std::optional<GpuPrice> reference_price(std::string_view gpu_preset) {
  // Specialty-cloud on-demand ranges, per GPU-hour: A100 80GB $1.10-1.50,
  // H100 SXM5 $2.50-3.50, H200 SXM5 $3.50-4.50 (Mercatus, "Cloud GPU pricing",
  // May 2026); B200 $4.50-6.00 on specialized clouds (Lyceum, "NVIDIA B200
  // GPU cloud pricing 2026", March 2026). Midpoints.
  if (gpu_preset == "a100-sxm-80g") {
    return GpuPrice{1.30,
                    "reference price: midpoint of $1.10-1.50/GPU-h on-demand, specialty "
                    "clouds, May 2026 (Mercatus cloud GPU pricing survey)"};
  }
  if (gpu_preset == "h100-sxm-80g") {
    return GpuPrice{3.00,
                    "reference price: midpoint of $2.50-3.50/GPU-h on-demand, specialty "
                    "clouds, May 2026 (Mercatus cloud GPU pricing survey)"};
  }
  if (gpu_preset == "h200-sxm-141g") {
    return GpuPrice{4.00,
                    "reference price: midpoint of $3.50-4.50/GPU-h on-demand, specialty "
                    "clouds, May 2026 (Mercatus cloud GPU pricing survey)"};
  }
  if (gpu_preset == "b200") {
    return GpuPrice{5.25,
                    "reference price: midpoint of $4.50-6.00/GPU-h on-demand, specialized "
                    "clouds, March 2026 (Lyceum B200 cloud pricing survey)"};
  }
  return std::nullopt;
}

}  // namespace podsim::scenarios
