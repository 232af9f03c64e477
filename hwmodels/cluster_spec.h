#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hwmodels/gpu_spec.h"

namespace podsim::hwmodels {

/// The scale-up domain (NVLink / NVSwitch, Infinity Fabric).
struct ScaleUpSpec {
  double bw_bytes_per_s = 0;  ///< per GPU, per direction
  double latency_s = 0;       ///< one hop GPU -> switch -> GPU
  int domain = 0;             ///< GPUs per scale-up domain (default gpus_per_node)
  /// Fraction of bw_bytes_per_s that payload reaches (protocol overhead):
  /// NVLink4 ~370 of 450 GB/s through NCCL (nccl-tests #212), i.e. 0.822.
  /// 1 = line rate. Range (0, 1].
  double efficiency = 1.0;
};

/// One switching tier of the scale-out network, innermost first.
struct TierSpec {
  std::string name;
  /// Nodes under one switch group of this tier; 0 = all nodes (the top).
  int nodes = 0;
  /// Downlink : uplink capacity of the groups *below* this tier into it
  /// ("1:7 above the pods" is 7 on the tier that joins the pods).
  double oversubscription = 1.0;
};

/// The scale-out network (InfiniBand / RoCE).
struct ScaleOutSpec {
  double nic_bw_bytes_per_s = 0;  ///< per NIC, per direction
  int nics_per_node = 0;
  double latency_s = 0;  ///< one switch hop (NIC to NIC through one switch)
  std::vector<TierSpec> tiers;
  /// NIC i of every node goes to the rail-i switch of its first tier.
  bool rail_optimized = false;
  /// Fraction of nic_bw_bytes_per_s that payload reaches: NDR 400G gives
  /// 46-48 of 50 GB/s through NCCL (nccl-tests #290), i.e. ~0.94. Applies to
  /// every scale-out link. Range (0, 1].
  double efficiency = 1.0;
};

struct ClusterSpec {
  std::string name;
  GpuSpec gpu;
  int nodes = 0;
  int gpus_per_node = 0;
  ScaleUpSpec scale_up;
  ScaleOutSpec scale_out;
  std::optional<double> price_per_gpu_hour;  ///< dollars
  std::string source;

  long long total_gpus() const { return static_cast<long long>(nodes) * gpus_per_node; }
};

}  // namespace podsim::hwmodels
