#pragma once

#include <string>
#include <vector>

#include "calibration/profile.h"
#include "hwmodels/cluster_spec.h"
#include "hwmodels/gpu_model.h"
#include "hwmodels/gpu_spec.h"
#include "hwmodels/kernel_efficiency.h"
#include "scenarios/input/problem.h"
#include "scenarios/input/spec.h"

namespace podsim::scenarios {

/// The GPU kernel model's parameters fitted to a calibration profile.
struct ProfileFit {
  hwmodels::KernelEfficiency efficiency;
  /// What was fitted from which series (with the fit's RMS relative error),
  /// and what kept its datasheet default because the profile lacks it.
  std::vector<std::string> notes;
};

/// Fits hwmodels' own kernel model (GpuModel: GEMM with wave quantisation
/// and K ramp, flash attention with its sequence ramp, memory-bound kernels,
/// launch overhead) to the profile's raw measurements by Levenberg-Marquardt
/// on log(predicted / measured time), starting from the datasheet defaults
/// of `target`.
///
/// The fit runs on the GPU that was measured (its SM count and the
/// profile's reference peaks), and the fitted parameters are fractions of
/// peak, so they carry over to `target` when it has the same compute units
/// (an H200 profile on an H100: same GH100 SMs and tensor cores; HBM
/// efficiency is a fraction of each GPU's own bandwidth). A different
/// architecture is accepted with a note saying so.
///
/// Throws calibration::ProfileError when the profile has nothing usable.
ProfileFit fit_kernel_efficiency(const calibration::Profile& profile,
                                 const hwmodels::GpuSpec& target, const std::string& origin);

/// Replaces the scale-up link efficiency of `cluster` by what the profile
/// measured between its GPUs: the asymptotic NCCL all-reduce bus bandwidth
/// when the profile has one (the ring all-reduce's bus bandwidth is the
/// per-GPU link bandwidth it achieved), else the peer-to-peer copy rate.
/// A single-GPU profile has neither and changes nothing. Returns notes saying
/// which it was.
std::vector<std::string> apply_scale_up_profile(const calibration::Profile& profile,
                                                hwmodels::ClusterSpec& cluster);

/// The GPU model and cluster a scenario runs on: datasheet efficiency curves,
/// or fitted to a calibration profile.
struct CalibratedHardware {
  hwmodels::GpuModel gpu;
  /// The scenario's cluster, its scale-up efficiency replaced by the
  /// profile's measurement when it has one (apply_scale_up_profile).
  hwmodels::ClusterSpec cluster;
  /// "datasheet", or "profile PATH".
  std::string source;
  /// The profile fit's notes (what was fitted from which series).
  std::vector<std::string> notes;
};

/// The hardware of `spec`, with the calibration profile at `profile_path`
/// (the CLI's --profile, which wins over the cluster's gpu.profile) when
/// there is one. An unreadable or unusable profile is a problem at
/// "--profile" or "/cluster/gpu/profile".
Result<CalibratedHardware> calibrated_hardware(const ScenarioSpec& spec,
                                               const std::string& profile_path);

}  // namespace podsim::scenarios
