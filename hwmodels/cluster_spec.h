#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hwmodels/gpu_spec.h"

namespace podsim::hwmodels {

/// How the GPUs of one scale-up domain are wired.
enum class ScaleUpTopology : uint8_t {
  /// Every GPU has one port into a non-blocking crossbar (NVSwitch: HGX
  /// nodes, NVL72 racks).
  kSwitch,
  /// A point-to-point link between every pair of GPUs, no switch (AMD's
  /// 8-GPU Infinity Fabric / xGMI mesh): domain - 1 links per GPU.
  kMesh,
  /// Chips on a grid of 2 or 3 axes, each linked to its neighbours on every
  /// axis (TPU ICI), with wrap-around links where the slice allows
  /// (TorusSpec). A domain is one slice.
  kTorus,
};

/// The grid of a torus domain (TPU slice) and when its axes wrap around
/// (hwmodels/torus.h derives a slice's shape and wrap links from it).
struct TorusSpec {
  int dims = 3;  ///< axes: 3 (v5p, TPU7x), 2 (v5e, v6e)
  /// Axis lengths of every slice, x (fastest-varying chip id) first; empty =
  /// derived from the slice's chip count (torus_shape).
  std::vector<int> shape;
  /// The largest slice's axis lengths (the pod's ICI extent, in any order);
  /// a derived shape stays inside it. Empty = unbounded.
  std::vector<int> max_shape;
  /// An axis wraps around when its length is a multiple of this (v6e: 16,
  /// the full pod axis; v5p/TPU7x: 4, one optical-switched cube); 0 = never.
  int wrap_length = 0;
  /// Wrap-around needs every axis to be such a multiple (v5p, TPU7x: only
  /// slices of whole 4x4x4 cubes get wrap links from the optical switches);
  /// false = each axis on its own (v6e).
  bool wrap_needs_all_axes = false;
};

/// The scale-up domain (NVLink / NVSwitch, Infinity Fabric, TPU ICI).
struct ScaleUpSpec {
  /// Per GPU, per direction, all its scale-up links together: a mesh GPU
  /// splits it over its domain - 1 links, a torus chip over its 2 x dims
  /// ports (one link = bw / links).
  double bw_bytes_per_s = 0;
  /// One hop: GPU -> switch -> GPU, one mesh link, one torus link.
  double latency_s = 0;
  /// GPUs per scale-up domain (default gpus_per_node; a torus: its slice).
  int domain = 0;
  /// Fraction of bw_bytes_per_s that payload reaches (protocol overhead):
  /// NVLink4 ~370 of 450 GB/s through NCCL (nccl-tests #212), i.e. 0.822.
  /// 1 = line rate. Range (0, 1].
  double efficiency = 1.0;
  ScaleUpTopology topology = ScaleUpTopology::kSwitch;
  TorusSpec torus;  ///< kTorus only
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
  /// TPU slices joined over the data-centre network (scale_out): the nodes
  /// are split evenly among them, each slice one torus domain. 1 otherwise.
  int slices = 1;
  std::optional<double> price_per_gpu_hour;  ///< dollars
  /// What price_per_gpu_hour is ("public list price: GCP on-demand ...").
  std::string price_source;
  std::string source;

  long long total_gpus() const { return static_cast<long long>(nodes) * gpus_per_node; }
  /// GPUs per scale-up domain: a torus' slice (total / slices), else
  /// scale_up.domain or, when 0, one node.
  int scale_up_domain() const {
    if (scale_up.topology == ScaleUpTopology::kTorus) {
      return slices > 0 ? static_cast<int>(total_gpus() / slices) : 0;
    }
    return scale_up.domain == 0 ? gpus_per_node : scale_up.domain;
  }
};

}  // namespace podsim::hwmodels
