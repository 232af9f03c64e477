#pragma once

#include <cstdint>
#include <vector>

#include "strategies/job.h"

namespace podsim::strategies {

/// One pipeline slot of a stage's compute order.
enum class SlotKind : uint8_t { kForward, kBackward, kBackwardWeight };
struct Slot {
  SlotKind kind = SlotKind::kForward;
  int32_t micro_batch = 0;
  int32_t chunk = 0;  ///< virtual stage on the rank
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
std::vector<std::vector<Slot>> pipeline_orders(const Job& job);

}  // namespace podsim::strategies
