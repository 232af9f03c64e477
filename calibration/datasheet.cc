#include "calibration/datasheet.h"

namespace podsim::calibration {
namespace {

bool contains(std::string_view s, std::string_view what) {
  return s.find(what) != std::string_view::npos;
}

// Numbers from shared/reference/hardware.md, sections 1.1-1.3 and 3.5 (sources
// [S01]-[S05], [S13], [S25] there): dense tensor rates, HBM bandwidth, L2 (the
// vendor's "MB" is MiB: cudaDeviceProp reports 50 MiB on H100), NVLink per
// direction, PCIe Gen5 x16 63 GB/s/dir (Gen4 x16 on A100: 31.5 GB/s/dir).
Datasheet a100_sxm() {
  Datasheet d;
  d.name = "NVIDIA A100 SXM 80GB";
  d.tensor_flops_per_s = {{"bf16", 312e12}, {"fp16", 312e12}, {"tf32", 156e12}, {"fp8", 0.0}};
  d.fp32_flops_per_s = 19.5e12;
  d.hbm_bw_bytes_per_s = 2039e9;
  d.l2_bytes = 40.0 * 1024 * 1024;
  d.sms = 108;
  d.nvlink_bw_bytes_per_s = 300e9;
  d.pcie_bw_bytes_per_s = 31.5e9;
  d.source = "shared/reference/hardware.md 1.1-1.3 (NVIDIA A100 datasheet [S02])";
  return d;
}

Datasheet h100_sxm() {
  Datasheet d;
  d.name = "NVIDIA H100 SXM 80GB";
  d.tensor_flops_per_s = {
      {"bf16", 989.4e12}, {"fp16", 989.4e12}, {"tf32", 494.7e12}, {"fp8", 1978.9e12}};
  d.fp32_flops_per_s = 66.9e12;
  d.hbm_bw_bytes_per_s = 3350e9;
  d.l2_bytes = 50.0 * 1024 * 1024;
  d.sms = 132;
  d.nvlink_bw_bytes_per_s = 450e9;
  d.pcie_bw_bytes_per_s = 63e9;
  d.source = "shared/reference/hardware.md 1.1-1.3 (NVIDIA H100 datasheet [S04])";
  return d;
}

Datasheet h200_sxm() {
  Datasheet d = h100_sxm();
  d.name = "NVIDIA H200 SXM 141GB";
  d.fp32_flops_per_s = 67e12;
  d.hbm_bw_bytes_per_s = 4800e9;
  d.source = "shared/reference/hardware.md 1.1-1.3 (NVIDIA H200 page [S05], GH100 compute as H100)";
  return d;
}

}  // namespace

double Datasheet::tensor(const std::string& format) const {
  const auto it = tensor_flops_per_s.find(format);
  return it == tensor_flops_per_s.end() ? 0.0 : it->second;
}

std::optional<Datasheet> find_datasheet(std::string_view gpu_name) {
  if (contains(gpu_name, "PCIe") || contains(gpu_name, "NVL")) return std::nullopt;
  if (contains(gpu_name, "H200")) return h200_sxm();
  if (contains(gpu_name, "H100")) return h100_sxm();
  if (contains(gpu_name, "A100") && contains(gpu_name, "80GB")) return a100_sxm();
  return std::nullopt;
}

}  // namespace podsim::calibration
