#pragma once

#include <cstdint>

#include "strategies/job.h"

namespace podsim::strategies {

// Memory per GPU: static (weights, gradients, optimizer states, as sharded by
// ZeRO/FSDP) and activations (what the forward pass keeps for the backward
// pass, per micro-batch). The activation numbers come from the op-level
// accounting of workload.h (each forward op's saved_bytes); the schedule puts
// them on its tasks as allocations and frees, so the peak comes from the
// simulated timeline. The closed-form Korthikanti et al. (2022) formula is
// kept as a cross-check.

/// One transformer layer, one micro-batch, one rank (bytes).
struct LayerActivations {
  double saved = 0;          ///< kept unless fully recomputed (Q, K, V, GEMM inputs, masks)
  double core = 0;           ///< attention-core internals, dropped by selective recompute
  double input = 0;          ///< the layer input: the checkpoint of full / every-C recompute
  double weight_inputs = 0;  ///< saved inputs of GEMMs with weights (zero-bubble W reads them)
  double output_grads = 0;   ///< gradients of those GEMMs' outputs (held from B to W)
  double full() const { return saved + core; }
};
LayerActivations layer_activations(const Job& job, const LayerKind& kind);
/// ... of the typical layer kind.
LayerActivations layer_activations(const Job& job);

/// Bytes the first model chunk's embedding and the last chunk's head keep
/// per micro-batch (dropout mask; final-norm input, output-layer input and
/// the fp32 softmax of the loss). Never recomputed.
double embedding_activation_bytes(const Job& job);
double head_activation_bytes(const Job& job);
/// Bytes one multi-token-prediction module keeps per micro-batch (never
/// recomputed).
double mtp_activation_bytes(const Job& job);

/// Bytes kept for the backward pass by global layers [layer_begin, layer_end)
/// of `chunk` for one micro-batch, under the job's recompute mode:
/// none: every layer in full; selective: without the attention-core
/// internals; full: each layer's input only; every C: the input of every
/// C-th layer of the chunk (layers chunk.layer_begin, +C, +2C, ...). Layers
/// recomputed in full by recompute.full_layers keep their input only.
/// Embedding, head and `mtp` modules' bytes are added when the range has them.
double stored_activation_bytes(const Job& job, const ChunkInfo& chunk, int64_t layer_begin,
                               int64_t layer_end, bool embedding, bool head, int64_t mtp = 0);
/// Bytes a recompute task brings back and its backward frees, for layers
/// [layer_begin, layer_end) of `chunk` recomputed and consumed layer by
/// layer (every C: C layers at a time): selective: one layer's core
/// internals; full (or a recompute.full_layers layer): one layer in full;
/// every C: min(C, layers) layers in full; none: 0. The largest layer sets it.
double recompute_transient_bytes(const Job& job, const ChunkInfo& chunk, int64_t layer_begin,
                                 int64_t layer_end);

/// Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large
/// Transformer Models"), Table 2, bytes per layer per micro-batch on one
/// rank: s b h (34 + 5 a s / h) unsharded; s b h (10 + 24/t + 5 a s/(h t))
/// with TP; s b h/t (34 + 5 a s / h) with TP + SP; selective drops the
/// 5 a s / h term; full keeps 2 s b h (2 s b h / t with SP, as Megatron
/// stores the sharded input). Their model: GPT with LayerNorm, GeLU MLP of
/// 4h, dropout, 16-bit activations with 1-byte masks, no flash attention,
/// no CP. kEvery returns the average checkpoint bytes per layer, 2 s b h / C.
double korthikanti_layer_bytes(const Job& job);

/// Static memory of one rank of `stage` (bytes).
struct StaticMemory {
  double params = 0;     ///< parameters held (TP/PP/EP sharded, before ZeRO)
  double weights = 0;    ///< bf16 (or fp32) weights, /shard with ZeRO-3
  double grads = 0;      ///< accumulated gradients (grad_format), /shard with ZeRO-2/3
  double optimizer = 0;  ///< fp32 master copy + Adam moments (or SGD momentum), /shard ZeRO>=1
  double total() const { return weights + grads + optimizer; }
};
/// ZeRO shards dense state over the shard group (shard_group or dp*cp) and
/// expert state over the expert-data-parallel group. ZeRO-2 with
/// ZeRO-2 reducing once per step (zero2_reduces_every_micro_batch) keeps full gradients.
StaticMemory static_memory(const Job& job, int64_t stage);
/// Parameters the optimizer of a rank of `stage` updates (its shard).
double optimizer_parameters(const Job& job, int64_t stage);
/// Optimizer-state bytes per updated parameter: Adam 8 (+4 fp32 master
/// weights under mixed precision), momentum SGD 4 (+4).
double optimizer_bytes_per_param(const Job& job);

}  // namespace podsim::strategies
