#pragma once

#include <cstdint>

#include "strategies/model.h"

namespace podsim::strategies {

// How unevenly a mixture-of-experts layer loads its expert-parallel ranks.
//
// All EP ranks meet at every layer's dispatch and combine, so each layer runs
// at the pace of its busiest rank. The busiest rank's load, relative to the
// mean T*top_k rows, is modelled as 1 + G(ep) * sqrt(noise^2 + skew^2):
//
// - noise (every routing): a token puts Hypergeometric(E, E/ep, k) of its k
//   copies on a given rank; over the T*ep tokens of the EP group the rank's
//   load has variance T k (1 - 1/ep) (E - k) / (E - 1). Forced balance
//   (Megatron's moe_router_force_load_balancing draws the logits i.i.d.
//   normal, moe_utils.py RandomSTE) is exactly this.
// - skew (a trained router only): expert i's share is (1 + d_i) / E with d_i
//   ~ N(0, s^2) fixed per layer; a rank averages E/ep of them. s =
//   MaxVio_global / G(64): Wang et al. 2024 (arXiv 2408.15664) Table 2 report
//   MaxVio_global (max load / mean - 1 over the validation set) of 0.04 for
//   auxiliary-loss-free balancing and 0.52 (3B) to 0.72 (1B) for an aux-loss
//   router (alpha = 0.001); the 3B value is used. Their DeepSeekMoE models'
//   routed-expert count is taken as 64 (an assumption: G(64) converts the
//   maximum into a spread).
// - G(n): the expected maximum of n standard normals.
//
// The factor is never below 1, so imbalance never speeds a step up. Tokens of
// one sequence route alike (DeepSeek-V3 section 4.5.3), so real per-batch
// noise can exceed the i.i.d. term; no per-micro-batch statistic was found.

/// MaxVio_global of an aux-loss router (Wang et al. 2024 Table 2, 3B model).
inline constexpr double kAuxLossMaxViolation = 0.52;
/// MaxVio_global of auxiliary-loss-free balancing (same table).
inline constexpr double kLossFreeMaxViolation = 0.04;
/// Routed experts of the models those statistics come from (assumed).
inline constexpr int64_t kMaxViolationReferenceExperts = 64;

/// Expected maximum of n independent standard normal draws (0 for n = 1).
double expected_max_standard_normal(int64_t n);

/// The busiest of `ep` ranks' routed rows over the mean, for one layer whose
/// ranks each route `tokens` tokens (>= 1). A capacity factor caps it.
double busiest_rank_load(const MoeShape& moe, int64_t tokens, int64_t ep);

}  // namespace podsim::strategies
