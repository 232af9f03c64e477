#pragma once

#include <cstdint>
#include <vector>

#include "strategies/job.h"

namespace podsim::strategies {

/// One pipeline slot of a stage's compute order.
enum class SlotKind : uint8_t {
  kForward,
  kBackward,        ///< input and weight gradients
  kBackwardInput,   ///< zero-bubble B: input gradients only, W deferred
  kBackwardWeight,  ///< zero-bubble W (of the oldest deferred B of `chunk`)
  /// DualPipe's overlapped pair: the forward of (micro_batch, chunk) and the
  /// full backward of (backward_micro_batch, backward_chunk) run as one
  /// computation, each one's communication hidden under the other's compute.
  kForwardBackward,
};
struct Slot {
  SlotKind kind = SlotKind::kForward;
  int32_t micro_batch = 0;
  int32_t chunk = 0;                  ///< virtual stage on the rank
  int32_t backward_micro_batch = -1;  ///< kForwardBackward only
  int32_t backward_chunk = -1;
  auto operator<=>(const Slot&) const = default;
};

/// The compute order of every stage (index = stage).
///
/// GPipe: all forwards, then all backwards (micro-batch order).
/// 1F1B: p-s-1 warm-up forwards on stage s, then one forward one backward,
///   then the remaining backwards.
/// Interleaved 1F1B (Megatron): m*v forwards and backwards; the k-th
///   forward runs chunk (k/p) mod v of micro-batch (k/(p*v))*p + k mod p
///   (micro-batches in groups of pp per chunk; needs m % pp == 0); backwards
///   walk the chunks in reverse; warm-up (p-s-1)*2 + (v-1)*p forwards.
/// Zero bubble ZB-H1 (Qi et al. 2023): backward split into B (input
///   gradients, on the critical path) and W (weight gradients). F and B keep
///   the 1F1B order; W is deferred: a W runs when the next F/B is not ready
///   yet (filling the bubbles), or when the next F would exceed p
///   micro-batches in flight (F done, W not done: 1F1B's peak, that of its
///   first stage, on every stage), and all remaining W
///   run at the end. The order comes from a dry run with unit F = B = W
///   costs, the assumption under which ZB-H1 is defined.
/// DualPipe (DeepSeek-V3 section 3.2.1; deepseek-ai/DualPipe dualpipe.py,
///   DualPipe.step): rank r holds chunk 0 (stage r of the micro-batches
///   entering at rank 0, micro-batches 0 .. m/2-1) and chunk 1 (stage p-1-r
///   of those entering at rank p-1, m/2 .. m-1). With half = min(r, p-1-r),
///   n = p/2 and "near" the direction entering at this rank's end: 2(n-half-1)
///   near F; (half+1) x (near F, far F); (n-half-1) x (far B input-only, W,
///   far F); (m/2-p+half+1) x (near F & far B, far F & near B) -- the middle
///   ranks run the first pair unoverlapped; (n-half-1) x (far B, far F & near
///   B); (half+1) x (far B, near B), the second half of them input-only;
///   (n-half-1) x (W, near B input-only); (half+1) x W. Its bubble on uniform
///   stages is (p/2 - 1)(F&B + B - 3W) (the paper's Table 2).
std::vector<std::vector<Slot>> pipeline_orders(const Job& job);

}  // namespace podsim::strategies
