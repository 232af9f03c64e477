#pragma once

#include <array>
#include <string>

#include "sim/number_format.h"

namespace podsim::hwmodels {

/// Datasheet description of one accelerator. Rates are dense (no 2:4
/// sparsity), bandwidths decimal bytes per second, one direction.
struct GpuSpec {
  std::string name;
  /// Dense peak FLOP/s of the matrix units by number format, indexed by
  /// sim::NumberFormat; kFp32 is the SM (non-tensor) FP32 rate. 0 = the format
  /// is not supported (fp8 on A100).
  std::array<double, sim::kNumberFormats> peak_flops_per_s{};
  double hbm_capacity_bytes = 0;
  double hbm_bw_bytes_per_s = 0;
  double l2_capacity_bytes = 0;
  double l2_bw_bytes_per_s = 0;
  int sms = 0;
  /// Clock at which the tensor peak is quoted (tile/wave model), Hz.
  double clock_hz = 0;
  /// Host launch overhead of one kernel on a stream, seconds.
  double launch_overhead_s = 0;
  /// NVLink SHARP (in-switch reduction) available in its scale-up domain.
  bool has_nvls = false;
  /// Board power the published GEMM measurements ran at (the preset's
  /// rating), watts; 0 = unknown (no power model).
  double board_power_w = 0;
  /// Power the board is capped at in this run (gpu.power_limit), watts;
  /// 0 = the board power.
  double power_limit_w = 0;
  /// The link between host memory and the device's memory (PCIe,
  /// NVLink-C2C), bytes per second in one direction; 0 = unknown (copies to
  /// and from host memory are not priced).
  double host_link_bytes_per_s = 0;
  /// Path of a calibration profile (JSON) to use instead of datasheet
  /// efficiency curves; empty = datasheet fallback.
  std::string profile;
  /// Where the numbers came from.
  std::string source;

  double peak(sim::NumberFormat format) const {
    return peak_flops_per_s[static_cast<size_t>(format)];
  }
};

}  // namespace podsim::hwmodels
