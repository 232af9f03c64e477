#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "calibration/execute_ops.h"
#include "hwmodels/collectives.h"
#include "hwmodels/fabric.h"
#include "hwmodels/gpu_model.h"
#include "scenarios/input/problem.h"
#include "scenarios/input/spec.h"
#include "strategies/job.h"

namespace podsim::scenarios {

// `podsim execute`: the work one GPU does in a scenario, as the executor
// (calibration/cuda/execute_*.cu) runs it for real, with the simulator's
// prediction for every op. The ops are strategies::layer_ops and
// optimizer_ops, the very lists the step simulation prices, and every
// prediction is price_op / predict_collective, the very functions it prices
// them with.

/// Every reason the executor cannot run `job`'s layers, with the JSON path it
/// concerns: it runs dense Llama-style layers (RMSNorm, SwiGLU, rotary
/// positions, flash attention with 128-dim heads) in bf16 with fp32 main
/// gradients and Adam, tensor and sequence parallel, without context
/// parallelism or mixture-of-experts. Empty = it can.
std::vector<Problem> execute_problems(const strategies::Job& job);

/// The executor's layer: one rank's shapes (strategies::rank_shape).
calibration::ExecLayerShape exec_layer_shape(const strategies::Job& job);

/// Transformer layers one GPU holds: the pipeline stage with the most layers.
int64_t gpu_share_layers(const strategies::Job& job);

/// The hardware the predictions are made for.
struct ExecuteHardware {
  const hwmodels::GpuModel& gpu;
  /// Collectives are priced alone over GPUs 0..tp-1 of this fabric.
  const hwmodels::Fabric& fabric;
  const hwmodels::CollectiveParams& collectives;
};

/// The plan for `layers` transformer layers of `job` (per pass): one layer's
/// forward, recompute and backward ops, and the optimizer over the rank's
/// share of those layers' parameters (its ZeRO shard), each with its
/// prediction. Problems: execute_problems, an op the executor does not know,
/// a shape that differs from the executor's data flow (expected_gemm), a
/// parameter count that differs from the strategies' one.
Result<calibration::ExecPlan> build_execute_plan(const strategies::Job& job, int64_t layers,
                                                 const ExecuteHardware& hardware,
                                                 const std::string& scenario_name);

/// The job of the correctness check: the same op structure (tp, sequence
/// parallelism, recompute mode, ZeRO sharding, the ratio of query to K/V
/// heads) at small shapes: 2 sequences of 128 tokens, hidden 256, at most 4
/// query heads and 384 MLP columns per rank, 2 layers.
strategies::Job check_job(const strategies::Job& job);
inline constexpr int64_t kCheckLayers = 2;

struct ExecuteOptions {
  /// Layers per pass; nullopt = gpu_share_layers.
  std::optional<int64_t> layers;
};

/// The timed plan and the check plan of a scenario.
struct ExecuteSetup {
  calibration::ExecPlan plan;
  calibration::ExecPlan check;
};

/// Checks the scenario (strategies::validate, the cluster's fabric,
/// execute_problems, the layer count) and builds both plans for `gpu`.
Result<ExecuteSetup> prepare_execute(const ScenarioSpec& spec, const ExecuteOptions& options,
                                     const hwmodels::GpuModel& gpu);

}  // namespace podsim::scenarios
