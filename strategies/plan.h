#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include "sim/number_format.h"

namespace podsim::strategies {

enum class Optimizer : uint8_t { kAdam, kSgd };

/// Batch, sequence and arithmetic of one optimizer step.
struct TrainingSetup {
  int64_t seq_len = 0;
  int64_t global_batch = 0;  ///< sequences per optimizer step
  int64_t micro_batch = 1;   ///< sequences per micro-batch on one pipeline
  /// Format of the matrix products; fp8 keeps everything else in bf16.
  sim::NumberFormat precision = sim::NumberFormat::kBf16;
  Optimizer optimizer = Optimizer::kAdam;
};

enum class PipelineSchedule : uint8_t { kGpipe, kOneFOneB, kInterleavedOneFOneB, kZeroBubble };
enum class ContextAlgorithm : uint8_t { kRing, kUlysses, kAllGather };
enum class RecomputeMode : uint8_t { kNone, kSelective, kFull, kEvery };
/// The parallel dimensions, for rank layout and per-dimension reporting.
enum class Dim : uint8_t { kTp, kCp, kEp, kDp, kPp };
inline constexpr int kDims = 5;

struct Recompute {
  RecomputeMode mode = RecomputeMode::kNone;
  int64_t every_layers = 0;  ///< with kEvery: checkpoint every C layers
};

/// How the work is split.
struct ParallelPlan {
  int64_t dp = 1, tp = 1, pp = 1, cp = 1, ep = 1;
  bool sequence_parallel = false;
  int zero = 0;             ///< 0..3 (3 = FSDP)
  int64_t shard_group = 0;  ///< HSDP shard group size; 0 = all of dp
  PipelineSchedule schedule = PipelineSchedule::kOneFOneB;
  int64_t virtual_stages = 1;
  ContextAlgorithm context = ContextAlgorithm::kRing;
  Recompute recompute;
  /// Rank layout, innermost first (default tp-cp-ep-dp-pp).
  std::array<Dim, kDims> order{Dim::kTp, Dim::kCp, Dim::kEp, Dim::kDp, Dim::kPp};
};

/// Which communication may overlap compute, and model-level knobs.
struct ScheduleOptions {
  bool overlap_dp = true;
  bool overlap_tp = false;
  bool overlap_pp = true;
  bool overlap_cp = true;
  bool flash_attention = true;
  /// Parameters per data-parallel gradient bucket; 0 = Megatron's default
  /// max(40M, 1M x data-parallel size).
  int64_t dp_bucket_params = 0;
  /// Transformer layers per ZeRO-3/FSDP unit (one all-gather each).
  int64_t fsdp_unit_layers = 1;
  /// Format of accumulated gradients and of their data-parallel reduction
  /// (fp32 main grads, as Megatron and torchtitan do by default).
  sim::NumberFormat grad_format = sim::NumberFormat::kFp32;
  /// ZeRO-2: reduce-scatter the gradients after every micro-batch (gradients
  /// stay sharded in memory), or once per step after the last micro-batch
  /// (full gradients held during accumulation). Unset: what the frameworks do,
  /// see zero2_reduces_every_micro_batch().
  std::optional<bool> zero2_reduce_every_micro_batch;
};

}  // namespace podsim::strategies
