#pragma once

// Inside the plan bounds (bounds.h): the hardware models and the cache of
// work prices both levels share (bounds_pricing.cc), the quick bounds from a
// stage's pipeline order (bounds_quick.cc) and the refined bounds from the
// representatives' schedule (bounds_refined.cc). Internal to the sweep.

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "hwmodels/collectives.h"
#include "hwmodels/fabric.h"
#include "hwmodels/gpu_model.h"
#include "hwmodels/kernel_implementation.h"
#include "hwmodels/memory_model.h"
#include "scenarios/step/profile_fit.h"
#include "scenarios/step/step_simulation.h"
#include "scenarios/sweep/bounds.h"
#include "strategies/job.h"
#include "strategies/layout.h"
#include "strategies/schedule.h"
#include "strategies/workload.h"

namespace podsim::scenarios {
namespace bounds_detail {

// The bounds are sums taken in another order than the simulation's; a
// relative margin far above rounding error (1e-16 per operation) and far
// below anything that matters keeps them on the safe side.
constexpr double kRoundingMargin = 1e-9;

inline double lower(double value) { return value * (1.0 - kRoundingMargin); }

/// Each stage's model chunks, virtual_index ascending.
std::vector<std::vector<strategies::ChunkInfo>> chunks_by_stage(const strategies::Job& job);

/// The quick memory bound of every stage: static memory, the runtime's
/// reservation and the stored activations of the in-flight micro-batches of
/// the stage's order.
std::vector<double> quick_memory(const strategies::Job& job, double reserved,
                                 const std::vector<std::vector<strategies::ChunkInfo>>& chunks,
                                 const std::vector<std::vector<strategies::Slot>>& orders);

inline void append_raw(std::string& key, const void* data, size_t size) {
  key.append(static_cast<const char*>(data), size);
}
template <typename T>
void append(std::string& key, T value) {
  append_raw(key, &value, sizeof value);
}

/// Everything about an op that its price depends on, as bytes.
void append_op(std::string& key, const strategies::Op& op);

/// Blocks of consecutive GPUs that are wired alike: the NVLink domain, then
/// each scale-out tier's group of nodes. A set of GPUs inside one full block
/// prices alike in any full block of that size, so in-task collectives are
/// priced on a cluster cut down to the first block (pricing instantiates the
/// whole fabric, which is slow for large clusters).
struct Level {
  int64_t gpus = 0;  ///< GPUs per block
  hwmodels::ClusterSpec cluster;
  std::unique_ptr<hwmodels::Fabric> fabric;  ///< built on first use
  CollectiveTimes collective_times;          ///< priced on `fabric`
};

std::vector<Level> levels_of(const hwmodels::ClusterSpec& cluster);

}  // namespace bounds_detail

struct PlanBounds::Impl {
  Impl(const CalibratedHardware& hardware, const hwmodels::KernelImplementation& software)
      : Impl(hardware.gpu, hardware.cluster, software) {}
  Impl(const hwmodels::GpuModel& model, const hwmodels::ClusterSpec& cluster,
       const hwmodels::KernelImplementation& software)
      : gpu(model),
        kernels(software),
        fabric(hwmodels::Fabric::build(cluster)),
        levels(bounds_detail::levels_of(cluster)),
        collectives(hwmodels::CollectiveParams::for_cluster(cluster)),
        memory(hwmodels::memory_model(cluster)) {}

  hwmodels::GpuModel gpu;
  hwmodels::KernelImplementation kernels;
  hwmodels::Fabric fabric;
  std::vector<bounds_detail::Level> levels;
  hwmodels::CollectiveParams collectives;
  hwmodels::MemoryModel memory;
  /// segment ops + group key -> seconds on the compute stream, per repeat;
  /// the key holds the interned ids of the groups' key and of each op.
  std::unordered_map<std::string, double> segment_costs;
  /// Each distinct byte string a segment's key is made of (a rank's groups,
  /// one op) numbered once, so that a key is those numbers: exact as the
  /// bytes themselves were, and ~30x shorter (the DeepSeek-V3 recipe sweep
  /// kept 294,787 segment keys of ~2.7 KB each as bytes, 0.8 GB).
  uint32_t interned(const std::string& bytes);
  std::unordered_map<std::string, uint32_t> interned_ids;
  std::string op_bytes;  ///< scratch for one op's bytes
  /// The collectives priced on the whole `fabric`, for every plan.
  CollectiveTimes collective_times;

  /// The TP, CP and EP (and expert-TP) groups of `rank`, the only groups in-task collectives
  /// use, and where to price them: when they lie inside one full block of a
  /// level (levels_of) and the layout gives the rank moved to the first
  /// block the same groups moved alike (checked, not assumed), on that
  /// level's cut-down cluster for the moved rank; otherwise on the whole
  /// fabric. The key holds the level and the (moved) GPU ids. A segment with
  /// a collective over the whole stage (fp8 amax reduction) is priced on the
  /// whole fabric for `global_rank`.
  struct Groups {
    std::string key;
    int64_t rank = 0;
    int64_t global_rank = 0;
    int level = -1;  ///< -1: the whole fabric
  };
  static constexpr std::array<strategies::GroupKind, 5> kInTask{
      strategies::GroupKind::kTp, strategies::GroupKind::kCp, strategies::GroupKind::kEp,
      strategies::GroupKind::kExpertTp, strategies::GroupKind::kExpertTpEp};
  Groups groups_of(const strategies::Layout& layout, int64_t rank) const;
  /// Where `groups` are priced: the level's cut-down fabric or the whole
  /// one, with the collectives already priced there.
  StepHardware hardware_for(const Groups& groups);
  double work_cost(const strategies::Job& job, const strategies::Layout& layout,
                   const Groups& groups, const strategies::Work& work);

  /// The price of one repeat of `seg` for a rank with `groups`.
  double segment_cost(const strategies::Job& job, const strategies::Layout& layout,
                      const Groups& groups, const strategies::Segment& seg);

  /// A collective of the refined bound on the whole fabric: its closed-form
  /// seconds and the bytes it puts on each constrained link. It depends on
  /// the op, the members, the bytes and the calls only, so every plan of the
  /// target shares one (plans that differ in micro-batch, schedule or
  /// recompute run the same data-parallel collectives).
  struct CommShape {
    double seconds = 0;
    std::vector<std::pair<uint32_t, double>> link_bytes;  ///< constrained links only
  };
  const CommShape& comm_shape(hwmodels::CollectiveOp op, const std::vector<int64_t>& members,
                              double bytes, uint8_t calls);
  std::map<std::tuple<int, std::vector<int64_t>, double, uint8_t>, CommShape> comm_shapes;

  /// Pipeline orders depend on the schedule, p, v and m only; plans that
  /// share them share one copy.
  std::shared_ptr<const std::vector<std::vector<strategies::Slot>>> orders(
      const strategies::Job& job);
  std::map<std::tuple<int, int64_t, int64_t, int64_t>,
           std::shared_ptr<const std::vector<std::vector<strategies::Slot>>>>
      order_cache;

  strategies::Work optimizer_work(const strategies::Job& job, int64_t stage) const;

  double quick_step(const strategies::Job& job,
                    const std::vector<std::vector<strategies::ChunkInfo>>& chunks,
                    const std::vector<std::vector<strategies::Slot>>& orders);  // bounds_quick.cc
  Bounds refined(const strategies::Job& job);                                   // bounds_refined.cc
};

}  // namespace podsim::scenarios
