#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace podsim::scenarios {

/// Memory of one pipeline stage's GPU at its peak, bytes.
struct StageMemory {
  int64_t stage = 0;
  double weights = 0;
  double grads = 0;
  double optimizer = 0;
  double activations = 0;  ///< at the moment of the peak, from the simulated timeline
  double other = 0;        ///< communication buffers, workspace, allocator reserve
  double peak = 0;
};

/// Exposed (not hidden under compute) communication time on the critical
/// stage, seconds, by parallel dimension.
struct ExposedComm {
  double tp = 0, cp = 0, pp = 0, dp = 0, ep = 0;
  double total() const { return tp + cp + pp + dp + ep; }
};

/// Where the critical stage's mixture-of-experts blocks spent their time,
/// seconds: parts of Breakdown's compute, recompute and exposed ep
/// communication (not added to them again).
struct MoeBreakdown {
  double router = 0;            ///< gating GEMM, top-k, token counts
  double permute = 0;           ///< permute, sort by expert, unsort, unpermute
  double dispatch_combine = 0;  ///< exposed dispatch / combine (and expert-TP) communication
  double grouped_gemm = 0;      ///< routed experts' grouped GEMMs and activation
  double shared_experts = 0;
  /// Of the above, what the busiest expert-parallel rank spends beyond an
  /// even share of the tokens (load imbalance).
  double imbalance = 0;
  double total() const {
    return router + permute + dispatch_combine + grouped_gemm + shared_experts;
  }
};

/// Where the step time went on the critical stage, seconds. The parts add up
/// to the step time.
struct Breakdown {
  double compute = 0;    ///< forward + backward kernels (model work)
  double recompute = 0;  ///< recomputed forward passes
  ExposedComm exposed_comm;
  double bubble = 0;     ///< pipeline idle time
  double optimizer = 0;  ///< optimizer step
  MoeBreakdown moe;      ///< inside the above
};

/// The report of one simulated training step (scenario-format.md, "The report").
struct Report {
  std::string scenario;
  double step_time_s = 0;
  double tokens_per_s = 0;
  double tokens_per_s_per_gpu = 0;
  double model_tflops_per_gpu = 0;
  double hardware_tflops_per_gpu = 0;
  double mfu = 0;
  double hfu = 0;
  std::string flops_convention;
  double model_flops_per_step = 0;
  double hardware_flops_per_step = 0;
  double bubble_fraction = 0;
  Breakdown breakdown;

  double memory_capacity_bytes = 0;
  double memory_peak_bytes = 0;
  bool memory_fits = false;
  std::vector<StageMemory> per_stage;

  int64_t gpus = 0;
  int64_t critical_stage = 0;
  std::string simulation_mode;  ///< "symmetric" or "every_rank"
  int64_t simulated_ranks = 0;
  uint64_t engine_events = 0;
  uint64_t fingerprint = 0;
  /// "datasheet", or "profile <path>" when a calibration profile was fitted.
  std::string hardware_source;
  /// With a profile: what was fitted from which measurements, and residuals.
  std::vector<std::string> calibration_notes;
  std::vector<std::string> warnings;
};

}  // namespace podsim::scenarios
