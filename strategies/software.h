#pragma once

#include <cstdint>

#include "sim/number_format.h"

namespace podsim::strategies {

// What a training framework runs and when: the schedule-policy face of a
// `software` preset (scenario-format.md v1.1). Strategies build op lists and
// schedules from it; how fast those kernels run is hwmodels' concern. The
// defaults are Megatron-Core's (the contract's default preset); the reader
// fills every field from the preset (scenarios/input/presets/software.json),
// where each value carries its source.

/// How a module's element-wise work is implemented.
enum class NormImpl : uint8_t {
  kFused,      ///< one kernel (TE, apex, native layer_norm): read x, write y
  kEagerFp32,  ///< PyTorch ops in fp32 (torchtitan RMSNorm: cast, pow, mean, add, rsqrt, mul, cast,
               ///< mul)
};
enum class RopeImpl : uint8_t {
  kFused,  ///< one kernel over q and k (TE fused_apply_rotary_pos_emb)
  /// float(), complex multiply, type_as per tensor (torchtitan): eager
  /// kernels even under torch.compile, which falls back to ATen on complex
  /// tensors.
  kEagerFp32Complex,
};
enum class ChainImpl : uint8_t {
  kFused,  ///< one kernel (jit fusers, bias-dropout-add)
  kEager,  ///< one kernel per PyTorch op
};

/// Where a clamped GLU's clamp runs (ModelShape::clamped_glu).
enum class ClampImpl : uint8_t {
  kWithActivation,  ///< inside the activation's kernel, or eager where the activation is
  /// PyTorch ops of their own before a fused activation: a clamp per half and
  /// a concatenation (Megatron-Core's weighted_bias_quick_geglu_impl).
  kEager,
};

struct ElementwisePolicy {
  NormImpl norm = NormImpl::kFused;
  RopeImpl rope = RopeImpl::kFused;
  ChainImpl activation = ChainImpl::kFused;
  ClampImpl activation_clamp = ClampImpl::kWithActivation;
  ChainImpl residual = ChainImpl::kFused;
  /// Grouped K/V materialised at the full head count before attention.
  bool repeat_kv = false;
  /// A compiler fuses every chain of element-wise ops between extern kernels
  /// (GEMMs, attention, collectives) into one kernel (Inductor, XLA).
  bool compiled = false;
  /// With `compiled`: the fraction of a hand-written kernel's memory
  /// bandwidth the compiler's normalization kernels reach, in (0, 1]: the
  /// forward (residual add + norm) and the backward (its dx and dweight).
  double compiled_norm_forward_bandwidth = 1;
  double compiled_norm_backward_bandwidth = 1;
};

/// The softmax cross-entropy over the vocabulary.
enum class LossImpl : uint8_t {
  kVocabParallelFp32,  ///< Megatron: output.float(), max, sub, exp, sum, div; grad = softmax -
                       ///< onehot
  kFp32Upcast,         ///< cross_entropy(logits.float()): cast, log_softmax, nll (torchtitan)
  kFused,              ///< one kernel each way on the 16-bit logits (xentropy, XLA)
};

/// How ring context parallelism merges each step's partial attention output
/// (scaled by its log-sum-exp) and accumulates the gradients of the steps.
enum class CpMerge : uint8_t {
  /// One fused kernel per step updates the output in its own 16-bit dtype;
  /// dQ and dK/dV accumulate in 16 bits (Transformer Engine's
  /// AttnFuncWithCPAndKVP2P).
  kFused16Bit,
  /// Eager PyTorch ops in fp32: each block output is upcast and merged with
  /// sigmoid/logsigmoid ops, a half-block update clones the whole running
  /// output, gradients accumulate in fp32 and dK/dV travel the ring in fp32
  /// (PyTorch's experimental context_parallel ring attention).
  kEagerFp32,
};

/// What "selective" recompute keeps.
enum class SelectiveRecompute : uint8_t {
  kAttentionCore,   ///< Megatron: recompute the attention core only
  kMatmulSaveList,  ///< torchtitan op-SAC: save every other mm and SDPA; recompute the rest
};

/// How gradients of the data-parallel group are reduced.
enum class GradReduce : uint8_t {
  kOverlapped,     ///< bucket by bucket while the backward runs
  kAfterBackward,  ///< one blocking reduction after the last micro-batch (Megatron 2021 DDP)
};
/// What one ZeRO/FSDP parameter all-gather covers.
enum class ParamGather : uint8_t {
  kBucket,     ///< ZeRO-1/2 buckets (Megatron distributed optimizer)
  kUnit,       ///< one FSDP unit (a transformer block)
  kParameter,  ///< one parameter tensor per collective (DeepSpeed ZeRO-3, 2021)
};
/// When the next unit's weights are gathered during the backward pass.
enum class BackwardPrefetch : uint8_t {
  kPre,   ///< before this unit's gradient kernels (FSDP BACKWARD_PRE, FSDP2)
  kPost,  ///< after them (FSDP1 BACKWARD_POST: the gather is exposed)
  kNone,  ///< when the unit is reached, blocking
};

struct DataParallelPolicy {
  GradReduce grad_reduce = GradReduce::kOverlapped;
  /// Wire format of the gradient reduction (fp32 or 16-bit).
  sim::NumberFormat reduce_format = sim::NumberFormat::kFp32;
  ParamGather param_gather = ParamGather::kBucket;
  /// The next unit's all-gather overlaps the current unit's forward.
  bool forward_prefetch = true;
  BackwardPrefetch backward_prefetch = BackwardPrefetch::kPre;
  /// The group's all-gathers and reduce-scatters share one NCCL stream (run in issue order).
  bool shared_collective_stream = true;
  /// Full recompute gathers released weights again (DeepSpeed ZeRO-3).
  bool regather_for_recompute = false;
  /// Copy-out of gathered weights and the reduce-scatter copy-in (with its
  /// cast to the reduce format) run on the compute stream (FSDP2).
  bool copies_on_compute_stream = false;
  /// Parameters with fewer elements stay replicated (ZeRO-3 persistence threshold).
  int64_t persist_below_params = 0;
};

/// Pipeline send/recv.
/// Under pipeline parallelism, when a chunk's gradient reduction (once per
/// step) runs.
enum class PipelineGradSync : uint8_t {
  /// Bucket by bucket as the chunk's last backward produces them (Megatron DDP).
  kInLastBackward,
  /// All of it once the chunk's last backward is done, the compute stream
  /// waiting for it (torch.distributed.pipelining with FSDP).
  kAfterLastBackward,
};

enum class P2pMode : uint8_t {
  kAsync,         ///< waited on the stream that needs the data
  kBlockingSync,  ///< wait + device synchronize: compute waits for every transfer (Megatron 2021)
};

/// fp8 training (training.precision fp8): which GEMMs run in fp8 and the
/// kernels that make fp8 operands.
enum class Fp8Recipe : uint8_t {
  kNone,            ///< the framework has no fp8: GEMMs stay 16-bit
  kTeDelayed,       ///< Transformer Engine delayed scaling (amax history)
  kTorchaoDynamic,  ///< torchao tensor-wise dynamic scaling
};
enum class WeightCast : uint8_t {
  kPerStep,  ///< cast once per optimizer step (TE is_first_microbatch caching)
  kPerCall,  ///< cast every forward call
};
/// How the fp8 gradient GEMMs (dgrad, wgrad) accumulate along K; the
/// forward GEMMs of every recipe use fast accumulation.
enum class Fp8Accumulation : uint8_t {
  kPromoted,  ///< partial sums promoted to fp32 every few K steps (FAST_ACCUM off)
  kFast,      ///< the tensor cores' reduced-precision accumulation throughout
};
struct Fp8Policy {
  Fp8Recipe recipe = Fp8Recipe::kTeDelayed;
  /// Cast (and transpose) of each operand: one fused kernel, or eager ops.
  ChainImpl casts = ChainImpl::kFused;
  /// The norm before a column-parallel linear writes its output in fp8.
  bool cast_fused_with_norm = true;
  bool output_layer = false;  ///< the vocabulary projection runs in fp8
  bool attention = false;     ///< attention runs in fp8
  WeightCast weight_cast = WeightCast::kPerStep;
  /// One blocking amax all-reduce per forward and per backward.
  bool amax_all_reduce = true;
  Fp8Accumulation gradient_accumulation = Fp8Accumulation::kPromoted;
};

/// Tensor-parallel communication overlap (with options.overlap.tp).
enum class TpOverlap : uint8_t {
  kNone,           ///< the framework cannot overlap TP collectives with GEMMs
  kTeUserbuffers,  ///< Transformer Engine userbuffers (Megatron --tp-comm-overlap)
  kAsyncTp,        ///< PyTorch micro-pipelined AsyncTP (needs torch.compile)
  /// XLA's collective matmul (windowed einsum): an einsum's all-gather or
  /// reduce-scatter decomposed into collective-permutes beside its partial
  /// einsums.
  kXlaCollectiveMatmul,
};
/// Which of the pipelined patterns the TP overlap runs (the bulk backward
/// pairs run beside their GEMM either way).
struct TpOverlapPatterns {
  /// The all-gather in front of a column-parallel GEMM, and the backward's dY
  /// gather before a row-parallel dgrad.
  bool all_gather = true;
  bool reduce_scatter = true;  ///< the reduce-scatter after a row-parallel GEMM
};

enum class OptimizerImpl : uint8_t {
  kFused,    ///< one multi-tensor kernel (apex / TE / DeepSpeed FusedAdam): 28 B per parameter
  kForeach,  ///< torch.optim foreach: 8 foreach ops, 80 B per parameter
  kForLoop,  ///< a Python loop over tensors (Composer DecoupledAdamW): 9 kernels per tensor, 88 B
  kXla,      ///< a compiled element-wise update (optax under XLA), one per leaf: 28 B per parameter
};
struct OptimizerPolicy {
  OptimizerImpl implementation = OptimizerImpl::kFused;
  /// Wrapper copies per parameter (fp32 main grads / params to 16-bit).
  double extra_bytes_per_param = 6;
  /// Gradient clipping reads the norm on the host (.item()).
  bool clip_host_sync = true;
  /// The optimizer's foreach ops dispatch through DTensor, tensor by tensor.
  bool dtensor_params = false;
};

/// How the framework runs a mixture-of-experts layer's host side and its
/// experts' GEMMs (the `moe` group).
struct MoePolicy {
  /// A dropless dispatch reads the split sizes (tokens per expert and rank)
  /// on the host before its all-to-all: one host synchronisation per MoE
  /// layer and forward pass.
  bool dispatch_host_sync = false;
  /// A rank's local experts run as one GEMM each, round-robin on this many
  /// streams; 0: one grouped kernel for all of them.
  int64_t expert_gemm_streams = 0;
};

/// How the framework holds the model's state and its temporaries (the
/// `memory` group): what the schedule's buffers are (strategies/schedule.h).
enum class ParamStorage : uint8_t {
  /// 16-bit weights beside the optimizer's fp32 master copy (Megatron's
  /// distributed optimizer, DeepSpeed).
  kWeightsAndMaster,
  /// The (sharded) parameter is the fp32 master; 16-bit weights exist only
  /// while gathered (PyTorch FSDP mixed precision).
  kMasterOnly,
};
enum class GradBuffers : uint8_t {
  kPersistent,  ///< contiguous gradient buffers allocated once, zeroed in place
  kPerStep,     ///< allocated by each step's backward, freed by zero_grad(set_to_none)
};
enum class WeightGrads : uint8_t {
  kIntoMainGrad,  ///< weight-gradient GEMMs accumulate into the fp32 main-grad buffer
  /// Autograd writes a 16-bit .grad per parameter, which the framework then
  /// adds or copies into its accumulator or reduce-scatter input.
  kAutogradThenCopy,
};
enum class GatheredWeights : uint8_t {
  kBesideShard,  ///< into a buffer around the local shard: (1 - 1/shard) of the unit
  kFullCopy,     ///< a new full-size buffer; the shard is kept apart (DeepSpeed ZeRO-3)
  /// A flat all-gather output in the gather stream's pool, copied out into
  /// per-parameter 16-bit storage on the compute stream (FSDP2).
  kCopyOut,
  kFlatSideStream,  ///< the unsharded flat parameter, in the gather stream's pool (FSDP1)
};
enum class StageOutputs : uint8_t {
  kDeallocated,        ///< freed once sent (Megatron's deallocate_output_tensor)
  kKeptUntilBackward,  ///< kept with the autograd graph until the micro-batch's backward
  kKeptUntilStepEnd,   ///< every micro-batch's output kept until the step ends
};
enum class ReceiveBuffers : uint8_t {
  kPerTransfer,    ///< allocated for each receive (Megatron's p2p_communication)
  kPerMicroBatch,  ///< one per micro-batch and chunk, allocated once and kept
};
struct MemoryPolicy {
  ParamStorage param_storage = ParamStorage::kWeightsAndMaster;
  GradBuffers grad_buffers = GradBuffers::kPersistent;
  WeightGrads weight_grads = WeightGrads::kIntoMainGrad;
  GatheredWeights gathered_weights = GatheredWeights::kBesideShard;
  StageOutputs stage_outputs = StageOutputs::kDeallocated;
  ReceiveBuffers receive_buffers = ReceiveBuffers::kPerTransfer;
};

/// The schedule-policy face of a software preset.
struct SoftwarePolicy {
  ElementwisePolicy elementwise;
  /// Compiled element-wise code is entered once per block and pass
  /// (torch.compile per TransformerBlock), not once per step (XLA).
  bool compiled_block_calls = false;
  LossImpl loss = LossImpl::kVocabParallelFp32;
  SelectiveRecompute selective = SelectiveRecompute::kAttentionCore;
  /// Unfused attention: the fused softmax kernel takes at most this many
  /// keys; beyond it the softmax runs as eager fp32 ops (0 = no limit).
  int64_t fused_softmax_max_keys = 4096;
  CpMerge cp_merge = CpMerge::kFused16Bit;
  PipelineGradSync pipeline_grad_sync = PipelineGradSync::kInLastBackward;
  DataParallelPolicy data_parallel;
  Fp8Policy fp8;
  TpOverlap tp_overlap = TpOverlap::kTeUserbuffers;
  TpOverlapPatterns tp_overlap_patterns;
  OptimizerPolicy optimizer;
  MemoryPolicy memory;
  MoePolicy moe;
};

}  // namespace podsim::strategies
