#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "strategies/job.h"
#include "strategies/workload.h"

namespace podsim::strategies {

// Memory per GPU: static (weights, gradients, optimizer states, as sharded by
// ZeRO/FSDP) and activations (what the forward pass keeps for the backward
// pass, per micro-batch). The activation numbers come from the op-level
// accounting of workload.h (each forward op's saved_bytes); the schedule puts
// them on its tasks as allocations and frees, so the peak comes from the
// simulated timeline. The closed-form Korthikanti et al. (2022) formula is
// kept as a cross-check.

/// One transformer layer, one micro-batch, one rank: the tensors its
/// backward pass reads (bytes each), from the forward ops' saved_bytes.
struct LayerTensors {
  std::vector<double>
      weight_inputs;  ///< saved inputs of GEMMs with weights (zero-bubble W reads them)
  std::vector<double> other_saved;   ///< the rest of what is kept unless fully recomputed
  std::vector<double> core;          ///< attention-core internals, dropped by selective recompute
  std::vector<double> output_grads;  ///< gradients of the weight GEMMs' outputs (held from B to W)
  double input = 0;  ///< the layer input: the checkpoint of full / every-C recompute
  /// The layer is recomputed in full whatever the mode (recompute.full_layers).
  bool full_recompute = false;
  /// Under recompute_modules or activation_offload (named_recompute_policy):
  /// what that policy keeps and brings back.
  bool named_policy = false;
  PolicyTensors policy;
  /// Everything: weight_inputs, other_saved, core.
  std::vector<double> full() const;
};
LayerTensors layer_tensors(const Job& job, const LayerKind& kind);
/// ... of the typical layer kind.
LayerTensors layer_tensors(const Job& job);
/// layer_tensors() of one job, built once per layer kind: every chunk of a
/// plan is made of the same few kinds, and building one walks the layer's
/// forward ops (the sweep's memory bound prices every chunk of 100,000
/// plans). Holds `job` by reference.
class LayerTensorsByKind {
 public:
  explicit LayerTensorsByKind(const Job& job) : job_(job) {}
  LayerTensorsByKind(const Job&&) = delete;
  const LayerTensors& operator()(const LayerKind& kind);

 private:
  const Job& job_;
  std::map<LayerKind, LayerTensors> built_;
};
/// Tensors the first model chunk's embedding and the last chunk's head keep
/// per micro-batch (dropout mask; final-norm input, output-layer input and
/// the fp32 softmax of the loss). Never recomputed.
std::vector<double> embedding_tensors(const Job& job);
std::vector<double> head_tensors(const Job& job);
/// Tensors one multi-token-prediction module keeps (never recomputed).
std::vector<double> mtp_tensors(const Job& job);
/// What layer `layer` of `chunk` keeps for its backward pass, one micro-batch:
/// none: everything; selective: all but the attention-core internals
/// (torchtitan's op-level policy, SelectiveRecompute::kMatmulSaveList: the
/// block input, every other matmul's output and attention's); full: the
/// layer input; every C: the input of layers chunk.layer_begin, +C, ... and
/// nothing for the others. A layer recomputed in full by
/// recompute.full_layers keeps its input only.
std::vector<double> kept_tensors(const Job& job, const LayerTensors& tensors,
                                 const ChunkInfo& chunk, int64_t layer);
/// What a recompute of a piece of `layers` layers brings back at once, and
/// its backward frees, recomputed and consumed layer by layer (every C: C
/// layers at a time): selective: one layer's core internals (an op-level
/// policy: one layer in full); full: one layer in full (so does a
/// recompute.full_layers layer); every C: min(C, layers) layers in full
/// (`repeats` times the list); none: nothing.
struct RecomputeTensors {
  std::vector<double> tensors;
  int64_t repeats = 0;
};
RecomputeTensors recompute_tensors(const Job& job, const LayerTensors& tensors, int64_t layers);
/// What a recompute of layers [layer_begin, layer_end) of `chunk` holds at
/// once: the recompute_tensors() of its layer kind that bring back the most.
RecomputeTensors range_recompute_tensors(LayerTensorsByKind& tensors, const Job& job,
                                         const ChunkInfo& chunk, int64_t layer_begin,
                                         int64_t layer_end);
RecomputeTensors range_recompute_tensors(const Job& job, const ChunkInfo& chunk,
                                         int64_t layer_begin, int64_t layer_end);

/// The loss over the vocabulary, in bytes per logit element (one
/// micro-batch on one rank: tokens x vocab/tp elements), by the framework's
/// implementation (SoftwarePolicy::loss): what its forward keeps for the
/// backward, and what forward and backward hold beyond that at their worst.
struct LossMemory {
  double kept = 0;
  std::vector<double> forward;   ///< per element, one entry per tensor
  std::vector<double> backward;  ///< per element, one entry per tensor
};
LossMemory loss_memory(const Job& job);
/// The logit elements of one micro-batch on one rank.
double logit_elements(const Job& job);

/// What a layer's backward holds while it runs besides what it frees: the
/// output and input gradients of its largest GEMM (one layer at a time).
std::vector<double> backward_working_tensors(const Job& job);

/// Sums of layer_tensors(): one layer, one micro-batch, one rank (bytes).
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

/// Bytes the embedding / head keep per micro-batch (sums of the lists).
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
/// ... with the layer kinds' tensors from `tensors` (built for `job`).
double stored_activation_bytes(LayerTensorsByKind& tensors, const Job& job, const ChunkInfo& chunk,
                               int64_t layer_begin, int64_t layer_end, bool embedding, bool head,
                               int64_t mtp = 0);
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

/// Standing state of one parameter tensor of `elements` elements on one
/// rank (bytes), as ZeRO shards it over the shard group (dense) or the
/// expert-data-parallel group (experts): weights (/shard with ZeRO-3),
/// gradients (/shard with ZeRO-3, or ZeRO-2 reducing every micro-batch), the
/// fp32 master copy under mixed precision and the optimizer moments
/// (/shard with ZeRO >= 1). With MemoryPolicy::param_storage master_only
/// (FSDP) the weights are the fp32 parameter itself, sharded with ZeRO >= 1,
/// and there is no separate master: the 16-bit weights the kernels read are
/// gathered copies (not standing state).
struct TensorState {
  double weights = 0;
  double grads = 0;
  double master = 0;
  double moments = 0;
};
TensorState tensor_state(const Job& job, double elements, bool expert);

/// Static memory of one rank of `stage` (bytes), what stands through the
/// step: tensor_state() summed over the stage's parameter tensors, without
/// the gradients of frameworks that allocate them in each step's backward
/// (GradBuffers::kPerStep).
struct StaticMemory {
  double params = 0;     ///< parameters held (TP/PP/EP sharded, before ZeRO)
  double weights = 0;    ///< bf16 (or fp32) weights, /shard with ZeRO-3
  double grads = 0;      ///< accumulated gradients (grad_format), /shard with ZeRO-2/3; 0 per step
  double optimizer = 0;  ///< fp32 master copy + Adam moments (or SGD momentum), /shard ZeRO>=1
  double total() const { return weights + grads + optimizer; }
};
/// ZeRO-2 with ZeRO-2 reducing once per step (zero2_reduces_every_micro_batch)
/// keeps full gradients.
StaticMemory static_memory(const Job& job, int64_t stage);
/// Parameters the optimizer of a rank of `stage` updates (its shard).
double optimizer_parameters(const Job& job, int64_t stage);
/// Optimizer-state bytes per updated parameter: the moments (Adam 8, momentum
/// SGD 4) and the fp32 master weights under mixed precision (4).
double optimizer_moment_bytes_per_param(const Job& job);
double master_weight_bytes_per_param(const Job& job);
double optimizer_bytes_per_param(const Job& job);

}  // namespace podsim::strategies
