// The `software` section of the scenario keys (scenario-format.md v1.1):
// the training framework that runs the plan, as groups of mechanisms. Every
// mechanism is required in an object without "base" (a framework is fully
// described or starts from a preset); each group's `sources` says where its
// values come from (presets/software.json gives one for every mechanism).
//
// Where a new mechanism goes: its key here (in its group, or a new group
// object with its own `sources`), a value and a source in every preset of
// presets/software.json, a field in SoftwareSpec (software_spec.h) read in
// reader_software.cc, and its use in scenarios/step/software.cc, which hands
// it to strategies (SoftwarePolicy) or hwmodels (KernelImplementation).
#include "scenarios/input/schema_decl.h"

namespace podsim::scenarios {

namespace {

using namespace decl;  // NOLINT(google-build-using-namespace): the table reads as a list

constexpr KeyDecl mechanism_choice(std::string_view path, std::string_view allowed,
                                   std::string_view doc) {
  return {path, KeyKind::kEnum, kRequired, "", Dimension::kNone, 0, 0, false, allowed, doc};
}
constexpr KeyDecl mechanism_flag(std::string_view path, std::string_view doc) {
  return {path, KeyKind::kBool, kRequired, "", Dimension::kNone, 0, 0, false, "", doc};
}
constexpr KeyDecl mechanism_time(std::string_view path, std::string_view doc) {
  return {path, KeyKind::kQuantity, kRequired, "", Dimension::kSeconds, 0, 10, false, "", doc};
}
constexpr KeyDecl sources(std::string_view path) {
  return {path,
          KeyKind::kTextMap,
          kOptional,
          "",
          Dimension::kNone,
          0,
          kTextLength,
          false,
          "",
          "where each value of the group comes from: mechanism key -> source"};
}

// clang-format off
constexpr KeyDecl kSoftwareKeys[] = {
  {"/software", KeyKind::kPresetOrObject, kDefault, "\"megatron-core\"", Dimension::kNone, 0, 0,
   false, "software", "the training framework that runs the plan: a preset name or an object (v1.1)"},
  preset_base("/software/base", "software"),
  text("/software/name", kComputed, "the preset name, else \"custom\"", kNameLength, "label of the framework"),
  text("/software/source", kOptional, "", kTextLength, "what the framework stands for (versions, code)"),

  object("/software/attention", kRequired, "the attention kernel"),
  mechanism_choice("/software/attention/kernel", "unfused|fa2|fa3|cudnn|triton|te|sdpa",
                   "unfused (scores in HBM), FlashAttention-2/-3, cuDNN fused, Triton, "
                   "te (Transformer Engine's choice by GPU) or sdpa (PyTorch's default order)"),
  integer("/software/attention/fused_softmax_max_keys", kRequired, "", 0, 1 << 30,
          "unfused attention: longest key sequence the fused softmax kernel takes; beyond it "
          "eager fp32 softmax ops (0 = no limit)"),
  // Added after v1.1 was published: optional, so full v1.1 objects still read.
  {"/software/attention/cp_merge", KeyKind::kEnum, kDefault, "\"fused_16bit\"", Dimension::kNone,
   0, 0, false, "fused_16bit|eager_fp32",
   "ring context parallelism: each step's partial output merged by one fused 16-bit kernel, or "
   "by eager fp32 ops with fp32 gradient accumulators and fp32 dK/dV on the ring"},
  sources("/software/attention/sources"),

  object("/software/elementwise", kRequired, "how norms, rotary embeddings, activations and residuals run"),
  mechanism_choice("/software/elementwise/norm", "fused|eager_fp32",
                   "one fused kernel, or eager PyTorch ops in fp32"),
  mechanism_choice("/software/elementwise/rope", "fused|eager_fp32_complex",
                   "rotary embedding: one fused kernel, or eager fp32 complex multiply (its "
                   "kernels stay under compiled: compilers fall back on complex tensors)"),
  mechanism_choice("/software/elementwise/activation", "fused|eager",
                   "MLP activation: one fused kernel, or one kernel per op"),
  // Added after v1.1 was published: optional, so full v1.1 objects still read.
  {"/software/elementwise/activation_clamp", KeyKind::kEnum, kDefault, "\"with_activation\"",
   Dimension::kNone, 0, 0, false, "with_activation|eager",
   "a clamped GLU (model.clamped_glu): the clamp inside the activation's kernel (eager ops where "
   "the activation is eager), or eager ops before a fused activation: a clamp per half and a "
   "concatenation"},
  mechanism_choice("/software/elementwise/residual", "fused|eager",
                   "(bias +) dropout + residual add: one fused kernel, or one kernel per op"),
  mechanism_flag("/software/elementwise/repeat_kv",
                 "grouped K/V heads are copied to the full head count before attention"),
  mechanism_flag("/software/elementwise/compiled",
                 "a compiler fuses every element-wise chain between GEMMs, attention and collectives"),
  number("/software/elementwise/compiled_norm_forward_bandwidth", kDefault, "1", 0, 1, true,
         "with compiled: fraction of a hand-written kernel's memory bandwidth the compiler's "
         "normalization forward (residual add + norm) reaches"),
  number("/software/elementwise/compiled_norm_backward_bandwidth", kDefault, "1", 0, 1, true,
         "with compiled: the same for the normalization backward (dx and dweight)"),
  sources("/software/elementwise/sources"),

  object("/software/loss", kRequired, "the softmax cross-entropy over the vocabulary"),
  mechanism_choice("/software/loss/implementation", "vocab_parallel_fp32|fp32_upcast|fused",
                   "Megatron's fp32 vocab-parallel kernels, cross_entropy(logits.float()), or one fused kernel"),
  sources("/software/loss/sources"),

  object("/software/host", kRequired, "what the host spends issuing work"),
  mechanism_time("/software/host/dispatch_forward", "host time per kernel issued by forward and optimizer code"),
  mechanism_time("/software/host/dispatch_backward", "host time per kernel issued by the backward pass"),
  mechanism_time("/software/host/compiled_region_call", "host time per call into a compiled region"),
  mechanism_time("/software/host/unit_hook", "host time of the sharding framework's hooks per unit per pass"),
  mechanism_time("/software/host/sync", "one host synchronisation (drains the queue of issued kernels)"),
  // Added after v1.1 was published: optional, so full v1.1 objects still read.
  {"/software/host/rank_list_entry", KeyKind::kQuantity, kDefault, "0", Dimension::kSeconds, 0,
   10, false, "", "host time per group rank of a collective called with per-rank tensor lists (building the "
   "rank's view and copying it to or from NCCL's flat buffer)"},
  mechanism_time("/software/host/dtensor_dispatch", "host time per tensor of a DTensor-dispatched op"),
  mechanism_choice("/software/host/cuda_graphs", "none|per_layer|full_iteration",
                   "kernels replayed from CUDA graphs instead of issued one by one"),
  sources("/software/host/sources"),

  object("/software/pipeline", kRequired, "pipeline-parallel transfers"),
  mechanism_choice("/software/pipeline/p2p", "async|blocking_sync",
                   "send/recv waited on the stream that needs the data, or waited and synchronised"),
  // Added after v1.1 was published: optional, so full v1.1 objects still read.
  {"/software/pipeline/grad_sync", KeyKind::kEnum, kDefault, "\"in_last_backward\"",
   Dimension::kNone, 0, 0, false, "in_last_backward|after_last_backward",
   "a pipeline chunk's once-a-step gradient reduction: bucket by bucket during its last "
   "backward, or all of it after that backward with the compute stream waiting for it"},
  sources("/software/pipeline/sources"),

  object("/software/data_parallel", kRequired, "how the data-parallel group reduces gradients and gathers weights"),
  mechanism_choice("/software/data_parallel/grad_reduce", "overlapped|after_backward",
                   "gradients reduced bucket by bucket during the backward pass, or once after it"),
  mechanism_choice("/software/data_parallel/reduce_dtype", "fp32|bf16",
                   "wire format of the gradient reduction (bf16: any 16-bit format)"),
  mechanism_choice("/software/data_parallel/param_gather", "bucket|unit|parameter",
                   "what one ZeRO/FSDP all-gather covers: a bucket, a unit (block), or one "
                   "parameter (ZeRO-3: a unit's gathers and reduce-scatters are one NCCL call per "
                   "partitioned tensor, each paying its latency)"),
  mechanism_flag("/software/data_parallel/forward_prefetch",
                 "the next unit's all-gather overlaps the current unit's forward (ZeRO-1/2: "
                 "the updated parameters' bucket gathers run beside the next step's forward, "
                 "else after the optimizer step)"),
  mechanism_choice("/software/data_parallel/backward_prefetch", "pre|post|none",
                   "the next unit's backward gather is issued before this unit's gradients, after them, "
                   "or when the unit is reached"),
  mechanism_flag("/software/data_parallel/shared_collective_stream",
                 "the group's all-gathers and reduce-scatters share one NCCL stream"),
  mechanism_flag("/software/data_parallel/regather_for_recompute",
                 "full recompute gathers released weights again"),
  mechanism_flag("/software/data_parallel/copies_on_compute_stream",
                 "gathered-weight copy-out and reduce-scatter copy-in kernels run on the compute stream"),
  integer("/software/data_parallel/persist_below_params", kRequired, "", 0, 1e12,
          "parameters with fewer elements stay replicated (ZeRO-3 persistence threshold)"),
  sources("/software/data_parallel/sources"),

  object("/software/recompute", kRequired, "what recompute modes mean in this framework"),
  mechanism_choice("/software/recompute/selective", "attention_core|matmul_save_list",
                   "\"selective\": recompute the attention core, or keep every other matmul and "
                   "attention and recompute the rest (op-level policy)"),
  sources("/software/recompute/sources"),

  object("/software/fp8", kRequired, "what fp8 training covers and the kernels that make fp8 operands"),
  mechanism_choice("/software/fp8/recipe", "none|te_delayed|torchao_dynamic",
                   "no fp8, Transformer Engine delayed scaling, or torchao dynamic tensor-wise scaling"),
  mechanism_choice("/software/fp8/casts", "fused|eager",
                   "each operand's amax, cast and transpose: one fused kernel, or eager ops"),
  mechanism_flag("/software/fp8/cast_fused_with_norm",
                 "the norm before a column-parallel linear writes its output in fp8"),
  mechanism_flag("/software/fp8/output_layer", "the vocabulary projection runs in fp8"),
  mechanism_flag("/software/fp8/attention", "attention runs in fp8"),
  mechanism_choice("/software/fp8/weight_cast", "per_step|per_call",
                   "fp8 weights cast once per optimizer step, or on every call"),
  mechanism_flag("/software/fp8/amax_all_reduce",
                 "delayed scaling: one blocking amax all-reduce over the stage (tp x dp x cp) per chunk's forward and backward"),
  // Added after v1.1 was published: optional, so full v1.1 objects still read.
  {"/software/fp8/gradient_accumulation", KeyKind::kEnum, kDefault, "\"promoted\"",
   Dimension::kNone, 0, 0, false, "promoted|fast",
   "the fp8 gradient GEMMs (dgrad, wgrad) of per-tensor recipes promote their partial sums to "
   "fp32 every few K steps (cuBLASLt FAST_ACCUM off), or keep the tensor cores' fast "
   "accumulation as the forward GEMMs do"},
  sources("/software/fp8/sources"),

  object("/software/tp_overlap", kRequired, "tensor-parallel communication overlap (with options.overlap.tp)"),
  mechanism_choice("/software/tp_overlap/method", "none|te_userbuffers|async_tp|xla_collective_matmul",
                   "none, Transformer Engine userbuffers, PyTorch AsyncTP, or XLA's collective matmul "
                   "(an einsum's all-gather or reduce-scatter decomposed into collective-permutes "
                   "beside its partial einsums)"),
  // Added after v1.1 was published: optional, so full v1.1 objects still read.
  boolean("/software/tp_overlap/all_gather", "true",
          "with the method, the all-gather in front of a column-parallel GEMM (and the backward's "
          "dY gather before a row-parallel dgrad) runs pipelined with it (Megatron-Core "
          "tp_comm_overlap_ag, XLA --xla_tpu_decompose_all_gather_einsum)"),
  boolean("/software/tp_overlap/reduce_scatter", "true",
          "with the method, the reduce-scatter after a row-parallel GEMM runs pipelined with it "
          "(Megatron-Core tp_comm_overlap_rs, AsyncTP's fused_matmul_reduce_scatter, XLA "
          "--xla_tpu_decompose_einsum_reduce_scatter)"),
  sources("/software/tp_overlap/sources"),

  // Added after v1.1 was published: optional, so full v1.1 objects still read.
  object("/software/tensor_parallel", kOptional, "how the framework lays activations out under tensor parallelism"),
  boolean("/software/tensor_parallel/shard_activations", "false",
          "the framework's tensor parallelism keeps the activations between its regions sharded "
          "whatever the plan says (Megatron's sequence parallelism, always on): a plan with "
          "tp > 1 runs with sequence_parallel"),
  sources("/software/tensor_parallel/sources"),

  object("/software/optimizer", kRequired, "the optimizer step and gradient clipping"),
  mechanism_choice("/software/optimizer/implementation", "fused|foreach|for_loop|xla",
                   "one multi-tensor kernel, torch foreach ops, a Python loop over tensors, or XLA"),
  number("/software/optimizer/extra_bytes_per_param", kRequired, "", 0, 1000, false,
         "bytes per parameter the optimizer wrapper copies besides the update (main grads/params)"),
  mechanism_flag("/software/optimizer/clip_host_sync", "gradient clipping reads the norm on the host"),
  mechanism_flag("/software/optimizer/dtensor_params",
                 "parameters are DTensors: every foreach op dispatches per tensor on the host"),
  sources("/software/optimizer/sources"),

  object("/software/memory", kRequired, "how the framework holds the model's state and temporaries"),
  mechanism_choice("/software/memory/reported", "reserved|allocated",
                   "the allocator statistic the framework logs as its peak memory"),
  // Added after v1.1 was published: optional, so full v1.1 objects still read.
  {"/software/memory/allocator", KeyKind::kEnum, kDefault, "\"caching\"", Dimension::kNone, 0, 0,
   false, "caching|xla",
   "PyTorch's caching allocator (freed blocks stay reserved for reuse), or XLA's buffer "
   "assignment (the compiled step holds its live peak and nothing more)"},
  mechanism_choice("/software/memory/param_storage", "weights_and_master|master_only",
                   "16-bit weights kept beside the optimizer's fp32 master, or the (sharded) "
                   "parameter is the fp32 master and 16-bit weights exist only gathered"),
  mechanism_choice("/software/memory/grad_buffers", "persistent|per_step",
                   "gradient buffers allocated once and zeroed in place, or allocated by each "
                   "backward and freed by zero_grad"),
  mechanism_choice("/software/memory/weight_grads", "into_main_grad|autograd_then_copy",
                   "weight-gradient GEMMs accumulate into the fp32 main grads, or autograd writes "
                   "16-bit grads the framework then copies"),
  mechanism_choice("/software/memory/gathered_weights",
                   "beside_shard|full_copy|copy_out|flat_side_stream",
                   "ZeRO-3/FSDP gathered weights: around the local shard, a full new buffer, an "
                   "all-gather buffer copied out per parameter (FSDP2), or the flat parameter in "
                   "the gather stream's pool (FSDP1)"),
  mechanism_choice("/software/memory/stage_outputs",
                   "deallocated|kept_until_backward|kept_until_step_end",
                   "a pipeline stage's output after it is sent: freed, kept until its backward, or "
                   "kept until the step ends"),
  mechanism_choice("/software/memory/receive_buffers", "per_transfer|per_micro_batch",
                   "pipeline receive buffers: allocated for each transfer, or one per micro-batch "
                   "and chunk allocated once and kept"),
  sources("/software/memory/sources"),

  // Added after v1.1 was published: optional, so full v1.1 objects still read.
  object("/software/moe", kOptional, "how a mixture-of-experts layer's host side and expert GEMMs run"),
  boolean("/software/moe/dispatch_host_sync", "false",
          "a dropless dispatch reads its split sizes on the host before the all-to-all: one host "
          "synchronisation per MoE layer and forward pass"),
  integer("/software/moe/expert_gemm_streams", kDefault, "0", 0, 1024,
          "a rank's local experts run as one GEMM each, round-robin on this many streams "
          "(0: one grouped kernel for all of them)"),
  sources("/software/moe/sources"),
};
// clang-format on

}  // namespace

std::span<const KeyDecl> software_keys() { return kSoftwareKeys; }

}  // namespace podsim::scenarios
