#pragma once

// Hardware specs built in code for the hwmodels tests, with the numbers of
// ../shared/reference/hardware.md (source keys [Sxx] there). The presets
// proper live in scenarios/; these exist so that hwmodels tests do not depend
// on them.

#include "hwmodels/cluster_spec.h"
#include "hwmodels/gpu_spec.h"
#include "sim/number_format.h"

namespace podsim::hwmodels::testing {

inline void set_peak(GpuSpec& g, sim::NumberFormat f, double v) {
  g.peak_flops_per_s[static_cast<size_t>(f)] = v;
}

/// H100 SXM 80GB [S01][S03][S04]; L2 bandwidth measured ~5.5 TB/s [S13].
inline GpuSpec h100() {
  GpuSpec g;
  g.name = "H100-SXM-80GB";
  set_peak(g, sim::NumberFormat::kBf16, 989.4e12);
  set_peak(g, sim::NumberFormat::kFp16, 989.4e12);
  set_peak(g, sim::NumberFormat::kFp8, 1978.9e12);
  set_peak(g, sim::NumberFormat::kTf32, 494.7e12);
  set_peak(g, sim::NumberFormat::kFp32, 66.9e12);
  g.hbm_capacity_bytes = 80.0 * 1024 * 1024 * 1024;
  g.hbm_bw_bytes_per_s = 3.35e12;
  g.l2_capacity_bytes = 50e6;
  g.l2_bw_bytes_per_s = 5.5e12;
  g.sms = 132;
  g.clock_hz = 1.83e9;
  g.has_nvls = true;
  return g;
}

/// A100 SXM 80GB [S01][S02]; L2 5,120 B/clk at 1.41 GHz [S30].
inline GpuSpec a100() {
  GpuSpec g;
  g.name = "A100-SXM-80GB";
  set_peak(g, sim::NumberFormat::kBf16, 312e12);
  set_peak(g, sim::NumberFormat::kFp16, 312e12);
  set_peak(g, sim::NumberFormat::kTf32, 156e12);
  set_peak(g, sim::NumberFormat::kFp32, 19.5e12);
  g.hbm_capacity_bytes = 80.0 * 1024 * 1024 * 1024;
  g.hbm_bw_bytes_per_s = 2.039e12;
  g.l2_capacity_bytes = 40e6;
  g.l2_bw_bytes_per_s = 7.2e12;
  g.sms = 108;
  g.clock_hz = 1.41e9;
  g.has_nvls = false;
  return g;
}

/// NVLink4 per direction 450 GB/s; NCCL reaches ~370 GB/s of it ([S40]
/// nccl-tests #212): efficiency 370/450. One-hop latency is not in the
/// reference; NCCL's own step latencies carry the NVLink cost.
inline ScaleUpSpec nvlink4(int domain) {
  ScaleUpSpec s;
  s.bw_bytes_per_s = 450e9;
  s.efficiency = 370.0 / 450.0;
  s.latency_s = 1e-6;
  s.domain = domain;
  return s;
}

/// NDR 400 Gb/s = 50 GB/s per direction; NCCL reaches 46-48 GB/s per NIC
/// ([S40] nccl-tests #290): efficiency 47/50.
inline ScaleOutSpec ndr(int nics_per_node, std::vector<TierSpec> tiers, bool rail_optimized) {
  ScaleOutSpec s;
  s.nic_bw_bytes_per_s = 50e9;
  s.efficiency = 47.0 / 50.0;
  s.nics_per_node = nics_per_node;
  s.latency_s = 1e-6;
  s.tiers = std::move(tiers);
  s.rail_optimized = rail_optimized;
  return s;
}

/// `nodes` DGX H100: 8 GPUs, NVLink4 + NVSwitch, 8 x CX-7 400G rail-optimized
/// under 32-node leaf groups (SuperPOD SU [S13]) and a non-blocking spine.
inline ClusterSpec dgx_h100(int nodes) {
  ClusterSpec c;
  c.name = "dgx-h100-test";
  c.gpu = h100();
  c.nodes = nodes;
  c.gpus_per_node = 8;
  c.scale_up = nvlink4(8);
  c.scale_out = ndr(8, {TierSpec{"leaf", 32, 1.0}, TierSpec{"spine", 0, 1.0}}, true);
  return c;
}

/// Meta's Llama 3 24K RoCE cluster [S35]: H100, 8 GPUs/node, one 400G NIC per
/// GPU, rack = 2 nodes, pod = 192 racks (384 nodes) at 1:1, 1:7 above pods.
inline ClusterSpec llama3_24k(int nodes = 3072) {
  ClusterSpec c;
  c.name = "llama3-24k-test";
  c.gpu = h100();
  c.nodes = nodes;
  c.gpus_per_node = 8;
  c.scale_up = nvlink4(8);
  c.scale_out = ndr(
      8, {TierSpec{"rack", 2, 1.0}, TierSpec{"pod", 384, 1.0}, TierSpec{"cluster", 0, 7.0}}, false);
  return c;
}

/// One node of 8 AMD MI300X on their Infinity Fabric mesh: 7 xGMI links per
/// GPU at 64 GB/s per direction nominal [S25], RCCL's own 48 GB/s after
/// protocol and ECC overhead (rccl issue #1210) = efficiency 0.75; 8 x 400G.
inline ClusterSpec mi300x_mesh(int nodes) {
  ClusterSpec c;
  c.name = "mi300x-mesh-test";
  c.gpu = h100();
  c.gpu.name = "MI300X";
  c.gpu.has_nvls = false;
  c.nodes = nodes;
  c.gpus_per_node = 8;
  c.scale_up.bw_bytes_per_s = 7 * 64e9;
  c.scale_up.efficiency = 0.75;
  c.scale_up.latency_s = 1e-6;
  c.scale_up.topology = ScaleUpTopology::kMesh;
  c.scale_out = ndr(8, {TierSpec{"leaf", 0, 1.0}}, true);
  return c;
}

/// TPU v5p hosts (4 chips each) in `slices` slices: 6 ICI links per chip at
/// 100 GB/s per direction (1,200 GB/s bidirectional per chip, Google), ~1 us
/// per hop [S24]; wrap-around only on slices of whole 4x4x4 cubes; DCN 50
/// Gb/s per chip (one 50G "NIC" per chip) on one non-blocking tier.
inline ClusterSpec tpu_v5p(int hosts, int slices = 1) {
  ClusterSpec c;
  c.name = "tpu-v5p-test";
  c.gpu = h100();
  c.gpu.name = "TPU v5p";
  c.gpu.has_nvls = false;
  c.nodes = hosts;
  c.gpus_per_node = 4;
  c.slices = slices;
  c.scale_up.bw_bytes_per_s = 600e9;
  c.scale_up.latency_s = 1e-6;
  c.scale_up.topology = ScaleUpTopology::kTorus;
  c.scale_up.torus.dims = 3;
  c.scale_up.torus.max_shape = {16, 20, 28};
  c.scale_up.torus.wrap_length = 4;
  c.scale_up.torus.wrap_needs_all_axes = true;
  c.scale_out.nic_bw_bytes_per_s = 50e9 / 8;
  c.scale_out.nics_per_node = 4;
  c.scale_out.latency_s = 5e-6;
  c.scale_out.tiers = {TierSpec{"dcn", 0, 1.0}};
  return c;
}

/// TPU v6e (Trillium) as tpu_v5p but a 2D torus, 4 links per chip at 100
/// GB/s per direction, wrap-around only on an axis of 16, DCN 100 Gb/s.
inline ClusterSpec tpu_v6e(int hosts, int slices = 1) {
  ClusterSpec c = tpu_v5p(hosts, slices);
  c.name = "tpu-v6e-test";
  c.gpu.name = "TPU v6e";
  c.scale_up.bw_bytes_per_s = 400e9;
  c.scale_up.torus.dims = 2;
  c.scale_up.torus.max_shape = {16, 16};
  c.scale_up.torus.wrap_length = 16;
  c.scale_up.torus.wrap_needs_all_axes = false;
  c.scale_out.nic_bw_bytes_per_s = 100e9 / 8;
  return c;
}

}  // namespace podsim::hwmodels::testing
