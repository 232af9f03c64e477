#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace podsim::scenarios {

/// Memory of one pipeline stage's GPU at its peak, bytes: what is live when
/// the allocator's allocated bytes peak, by kind (as requested), then what
/// the caching allocator holds beyond it and what lives outside it.
struct StageMemory {
  int64_t stage = 0;
  double weights = 0;
  double grads = 0;
  double optimizer = 0;
  double activations = 0;  ///< kept for the backward passes, from the simulated timeline
  double temporaries = 0;  ///< recomputed activations, gathered weights, loss buffers, workspaces
  double allocated = 0;    ///< the allocator's allocated peak (blocks rounded to 512 B)
  double reserved = 0;     ///< its reserved peak: segments, cached free blocks included
  double outside_allocator = 0;  ///< CUDA context and NCCL buffers (in no allocator counter)
  double peak = 0;               ///< what the framework reports as its peak (reserved or allocated)
  double device = 0;             ///< reserved + outside_allocator: what the GPU must hold
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

/// What the compute stream's busy time (compute + recompute + optimizer of
/// the Breakdown) was made of, seconds: the parts add up to those three.
struct ComputeSplit {
  double gemm = 0;             ///< matrix products (forward, backward, recompute)
  double attention = 0;        ///< attention kernels (flash, or the unfused score products)
  double memory_bound = 0;     ///< element-wise kernels, norms, casts, the loss
  double host_idle = 0;        ///< the GPU waiting for the host to issue kernels
  double optimizer = 0;        ///< optimizer and gradient-clipping kernels
  double comm_contention = 0;  ///< compute slowed by the SMs NCCL kernels hold
  double host_copy_wait = 0;   ///< the GPU waiting for offload copies over the host link
};

/// Where the step time went on the critical stage, seconds. The parts add up
/// to the step time.
struct Breakdown {
  double compute = 0;    ///< forward + backward kernels (model work)
  double recompute = 0;  ///< recomputed forward passes
  ExposedComm exposed_comm;
  double bubble = 0;     ///< pipeline idle time
  double optimizer = 0;  ///< optimizer step
  ComputeSplit compute_split;
  MoeBreakdown moe;  ///< inside the above
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
  /// The largest per-stage `peak`: what the framework's allocator reports.
  double memory_peak_bytes = 0;
  /// The largest per-stage `device`; the plan fits when it is within capacity.
  double memory_device_peak_bytes = 0;
  /// The allocator statistic `peak` is: "reserved" or "allocated".
  std::string memory_counter = "reserved";
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
