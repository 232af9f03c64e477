// Pricing one work on one rank, internal to the step layer: each compute op
// alone on the GPU, each in-task collective alone on the fabric, and the host
// issuing the work's kernels. step_simulation.cc runs the priced works.
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <tuple>
#include <vector>

#include "scenarios/step/step_simulation.h"

namespace podsim::scenarios {

/// The bits of a double, for hash keys of exact values.
inline uint64_t bits_of(double value) {
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

/// Prices ops and works; caches what repeats (every rank of a stage runs the
/// same works, and the same collective on congruent groups).
class Pricer {
 public:
  Pricer(const strategies::Schedule& schedule, const StepHardware& hardware)
      : schedule_(schedule), hw_(hardware), op_times_(schedule.works.size()) {}

  /// Seconds one instance of a compute op takes.
  double op_time(int32_t work, size_t segment, size_t op_index);

  /// Seconds one instance of a compute op takes beside the collective it is
  /// paired with: a GEMM cut into `chunks` row chunks runs them back to back
  /// (CollectiveShape::gemm_chunks), each with its own waves.
  double overlapped_op_time(int32_t work, size_t segment, size_t op_index, int32_t chunks);

  /// Fraction of the GPU's SMs the NCCL kernel of a collective among
  /// `group` holds while it runs (hwmodels::kernel_sms over GpuSpec::sms),
  /// below 1 (compute beside it is priced at 1 / (1 - share)).
  double comm_sm_share(const std::vector<int64_t>& group) const;

  /// The SM share of an in-task collective: the SMs its kernels hold where
  /// the op says (a fused MoE dispatch's, a TP overlap's), else its NCCL
  /// kernel's.
  double comm_sm_share(const strategies::CollectiveShape& c, const std::vector<int64_t>& group);

  /// The framework's host costs.
  const hwmodels::HostCost& host() const { return hw_.kernels.host; }

  /// The GPU's link to host memory, bytes per second one way (0: unknown).
  double host_link_bytes_per_s() const { return hw_.gpu.spec().host_link_bytes_per_s; }

  /// Seconds an in-task collective takes among `group` (priced alone).
  double collective_time(const strategies::Op& op, const std::vector<int64_t>& group);

  /// Seconds of one instance of a compute op spent beyond its even share of
  /// the routed tokens (its imbalance).
  double imbalance_time(int32_t work, size_t segment, size_t op_index);

 private:
  double price_compute(const strategies::Op& op) const;

  const strategies::Schedule& schedule_;
  const StepHardware& hw_;
  // [work][segment][op] -> seconds per instance; -1 = not priced yet.
  std::vector<std::vector<std::vector<double>>> op_times_;
  CollectiveTimes collective_cache_;
  std::map<std::tuple<int32_t, size_t, size_t, int32_t>, double> chunked_times_;
};

/// The group an in-task collective runs over: its dimension's, the
/// expert-TP (and EP) group of MoE experts under parallel folding, or the
/// whole stage (fp8 amax reduction).
strategies::GroupKind in_work_group_kind(const strategies::CollectiveShape& c);

/// What `work` costs on `rank`'s compute stream. `slowdown` stretches the
/// work's compute ops (a slow GPU, or a peer of one through an in-task
/// collective).
WorkCost price_work(const strategies::Schedule& schedule, Pricer& pricer, int32_t work,
                    int64_t rank, double slowdown = 1.0);

}  // namespace podsim::scenarios
