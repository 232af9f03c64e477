#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace podsim::calibration {

/// Vendor numbers a calibration is compared against (and, for known GPUs, the
/// reference peaks that measured efficiencies are fractions of). Rates are
/// dense, bandwidths decimal bytes per second, one direction; 0 = unknown or
/// unsupported.
struct Datasheet {
  std::string name;
  /// Dense tensor-core FLOP/s by format: "bf16", "fp16", "tf32", "fp8".
  std::map<std::string, double> tensor_flops_per_s;
  double fp32_flops_per_s = 0;  ///< SM (non-tensor) FP32
  double hbm_bw_bytes_per_s = 0;
  double l2_bytes = 0;
  int sms = 0;
  double nvlink_bw_bytes_per_s = 0;  ///< per GPU, per direction
  double pcie_bw_bytes_per_s = 0;    ///< per direction, theoretical
  std::string source;

  /// tensor_flops_per_s[format] or 0.
  double tensor(const std::string& format) const;
};

/// The datasheet of the GPU whose cudaDeviceProp name this is ("NVIDIA H200",
/// "NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB"), or nullopt when podsim
/// has none (PCIe variants included: their clocks and power differ).
std::optional<Datasheet> find_datasheet(std::string_view gpu_name);

}  // namespace podsim::calibration
