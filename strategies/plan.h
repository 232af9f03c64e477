#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "sim/number_format.h"

namespace podsim::strategies {

enum class Optimizer : uint8_t { kAdam, kSgd };

/// How low-precision matrix products are scaled (training.precision_recipe,
/// format 1.2): which casts, amax passes and scale layouts each operand of a
/// quantized GEMM costs (strategies/elementwise_ops.cc, with sources).
enum class PrecisionRecipe : uint8_t {
  kSoftware,    ///< unset: the software preset's fp8 recipe
  kDelayed,     ///< per-tensor scale from the amax history (TE DelayedScaling)
  kTensorwise,  ///< per-tensor scale from the current amax (TE Float8CurrentScaling)
  kBlockwise,   ///< 1x128 activation / 128x128 weight blocks (TE Float8BlockScaling)
  kMxfp8,       ///< 1x32 blocks with E8M0 scales, Blackwell (TE MXFP8BlockScaling)
  kNvfp4,       ///< 1x16 blocks, E4M3 scales + per-tensor fp32 (TE NVFP4BlockScaling)
  kAqtInt8,     ///< MaxText's AQT int8: per-channel scales computed every call
  kFp8Full,     ///< delayed-scaled fp8 linears and fp8 attention (TE fp8_dpa)
};

/// Batch, sequence and arithmetic of one optimizer step.
struct TrainingSetup {
  int64_t seq_len = 0;
  int64_t global_batch = 0;  ///< sequences per optimizer step
  int64_t micro_batch = 1;   ///< sequences per micro-batch on one pipeline
  /// Format of the matrix products; fp8 keeps everything else in bf16.
  sim::NumberFormat precision = sim::NumberFormat::kBf16;
  PrecisionRecipe recipe = PrecisionRecipe::kSoftware;
  Optimizer optimizer = Optimizer::kAdam;
};

enum class PipelineSchedule : uint8_t {
  kGpipe,
  kOneFOneB,
  kInterleavedOneFOneB,
  kZeroBubble,
  kDualPipe,  ///< DeepSeek-V3's bidirectional schedule (two stages per rank)
};
enum class ContextAlgorithm : uint8_t { kRing, kUlysses, kAllGather };
enum class RecomputeMode : uint8_t { kNone, kSelective, kFull, kEvery };
/// The parallel dimensions, for rank layout and per-dimension reporting.
enum class Dim : uint8_t { kTp, kCp, kEp, kDp, kPp };
inline constexpr int kDims = 5;

/// Megatron's selective-recompute modules (--recompute-modules), as bits.
enum class RecomputeModule : uint8_t {
  kCoreAttn,       ///< the attention core
  kMlp,            ///< a dense layer's MLP, checkpointed whole
  kMoe,            ///< an MoE layer's MLP block, checkpointed whole
  kMoeAct,         ///< the routed experts' activation (output discarded)
  kLayerNorm,      ///< the two norms of a layer (outputs discarded)
  kMlaUpProj,      ///< MLA's up-projections and RoPE (outputs discarded)
  kSharedExperts,  ///< the shared experts
};
constexpr uint32_t module_bit(RecomputeModule m) { return 1u << static_cast<unsigned>(m); }

struct Recompute {
  RecomputeMode mode = RecomputeMode::kNone;
  int64_t every_layers = 0;  ///< with kEvery: checkpoint every C layers
  /// The first `full_layers` layers of every model chunk recompute in full
  /// (Megatron's --recompute-method block); the others follow `mode`.
  int64_t full_layers = 0;
  /// RecomputeModule bits (module_bit); with mode kSelective they say what
  /// is recomputed, none set = the attention core.
  uint32_t modules = 0;
};

/// MaxText's named activations (parallelism.activation_offload), as bits:
/// with any set, the layer follows MaxText's custom remat policy -- the named
/// tensors are saved to pinned host memory, everything else is recomputed.
enum class OffloadTensor : uint8_t {
  kDecoderLayerInput,  ///< the layer's input (the scan carry)
  kQueryProj,
  kKeyProj,
  kValueProj,
  kQkvProj,  ///< query, key and value together
  kContext,  ///< the attention core's output
  kOutProj,  ///< the attention output projection's output
  kMlpWi0,   ///< the gate projection's output (SwiGLU)
  kMlpWi1,   ///< the up projection's output
  kMlpWo,    ///< the down projection's output
};
constexpr uint32_t offload_bit(OffloadTensor t) { return 1u << static_cast<unsigned>(t); }

/// What one model chunk (virtual pipeline stage) holds, in model order: an
/// explicit pipeline layout (Megatron's --pipeline-model-parallel-layout).
struct ChunkLayout {
  int64_t layers = 0;      ///< transformer layers
  bool embedding = false;  ///< "E"
  int64_t mtp = 0;         ///< "m": multi-token-prediction modules
  bool loss = false;       ///< "L": final norm, output layer and loss
  auto operator<=>(const ChunkLayout&) const = default;
};

/// How the work is split.
struct ParallelPlan {
  int64_t dp = 1, tp = 1, pp = 1, cp = 1, ep = 1;
  /// Tensor parallelism inside each expert (Megatron's expert_tensor_parallel
  /// size). MoE parallel folding: experts regroup the tp*cp*dp ranks of a
  /// stage as expert_tp x ep x expert-dp, so ep * expert_tp divides tp*cp*dp.
  int64_t expert_tp = 1;
  bool sequence_parallel = false;
  int zero = 0;             ///< 0..3 (3 = FSDP)
  int64_t shard_group = 0;  ///< HSDP shard group size; 0 = all of dp
  PipelineSchedule schedule = PipelineSchedule::kOneFOneB;
  int64_t virtual_stages = 1;
  /// Explicit layer placement, pp * virtual_stages entries in model order;
  /// empty = the default rule (job.h, chunk_layer_counts).
  std::vector<ChunkLayout> layout;
  ContextAlgorithm context = ContextAlgorithm::kRing;
  Recompute recompute;
  /// OffloadTensor bits; 0 = no host offload.
  uint32_t activation_offload = 0;
  /// Rank layout, innermost first (default tp-cp-ep-dp-pp).
  std::array<Dim, kDims> order{Dim::kTp, Dim::kCp, Dim::kEp, Dim::kDp, Dim::kPp};
};

/// How a framework moves tokens to and from the experts.
enum class MoeDispatcher : uint8_t {
  /// Megatron's alltoall dispatcher: permute, NCCL all-to-all over EP (one
  /// copy per token and destination rank), sort by local expert; mirrored.
  kAllToAll,
  /// DeepEP / HybridEP (Megatron's flex dispatcher, DeepSeek's HAI-LLM): the
  /// global permute inside the kernel, a token crosses the network once per
  /// destination node and is forwarded over NVLink, on SMs of its own.
  kFusedAllToAll,
};

/// The framework's mixture-of-experts mechanisms (set by the software
/// preset; strategies knows no hardware, so SM counts are counts).
struct MoeRuntime {
  MoeDispatcher dispatcher = MoeDispatcher::kAllToAll;
  /// Shared experts on a stream of their own beside the dispatch and combine
  /// all-to-alls (Megatron --moe-shared-expert-overlap).
  bool shared_expert_overlap = false;
  /// Format of dispatched tokens (DeepEP dispatches fp8, combines bf16).
  sim::NumberFormat dispatch_format = sim::NumberFormat::kBf16;
  /// SMs the fused dispatch/combine kernels hold while they run; 0 = the
  /// NCCL kernel's channels (hwmodels::kernel_sms).
  int64_t dispatch_sms = 0;
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
  MoeRuntime moe;
};

}  // namespace podsim::strategies
