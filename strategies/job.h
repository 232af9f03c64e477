#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "strategies/model.h"
#include "strategies/plan.h"
#include "strategies/software.h"

namespace podsim::strategies {

/// Everything that determines the work of one optimizer step: the model, the
/// batch, the parallel plan, the options and what the training framework
/// runs (its schedule policy). Plain value; no hardware.
struct Job {
  ModelShape model;
  TrainingSetup training;
  ParallelPlan plan;
  ScheduleOptions options;
  SoftwarePolicy software;
};

/// One reason a job cannot be built, located by the JSON pointer of the
/// scenario key it concerns ("/parallelism/tp"), with a fix where one is known.
struct PlanProblem {
  std::string path;
  std::string message;
  std::string hint;  ///< may be empty
};

/// Every problem of a job (empty = the schedule, workload and memory
/// functions below accept it). Never throws.
std::vector<PlanProblem> validate(const Job& job);

// ---- Derived model properties -------------------------------------------
//
// The JSON contract does not spell out dropout, biases or position
// embeddings, so they are derived from the architecture family: a model with
// LayerNorm and a GeLU MLP is GPT-2/3 style (Megatron GPT, NeMo GPT): learned
// position embeddings, biases on every linear layer and LayerNorm, dropout
// after attention probabilities, attention output, MLP output and embeddings.
// Anything else (RMSNorm or SwiGLU) is Llama style: rotary positions, no
// biases, no dropout (Llama 2/3, Mixtral configs set dropout 0 and bias off).

/// LayerNorm + GeLU: GPT-2/3 family.
bool gpt_style(const ModelShape& model);
/// Dropout layers present (GPT style only).
bool uses_dropout(const ModelShape& model);
/// Biases on linear layers and LayerNorm (GPT style only).
bool uses_biases(const ModelShape& model);
/// Learned absolute position embeddings (GPT style); else rotary (no params).
bool learned_positions(const ModelShape& model);
/// head_dim, or hidden / heads when unset.
int64_t head_dim(const ModelShape& model);
/// kv_heads, or heads (MHA) when unset.
int64_t kv_heads(const ModelShape& model);

// ---- Derived plan quantities ---------------------------------------------

/// Micro-batches per pipeline per step: global_batch / (dp * micro_batch).
int64_t micro_batches(const Job& job);
/// Micro-batches each model chunk of a stage runs per step: all of them, or
/// half under DualPipe (each direction's chunk takes its half).
int64_t chunk_micro_batches(const Job& job);
/// Ranks holding the same dense weights: dp * cp (Megatron reduces dense
/// gradients over the data-parallel group "with context parallel").
int64_t grad_group_size(const Job& job);
/// Expert data-parallel size: dp * cp * tp / (ep * expert_tp) (Megatron's
/// expert_data_parallel_size = world / (expert_tp * ep * pp)).
int64_t expert_dp_size(const Job& job);
/// Ranks one ZeRO/FSDP shard set spans: shard_group, or dp * cp when 0.
int64_t shard_group_size(const Job& job);
/// Whether ZeRO-2 reduce-scatters gradients after every micro-batch. Unset
/// option: yes without pipeline parallelism (DeepSpeed ZeRO-2, PyTorch FSDP
/// SHARD_GRAD_OP), no with it: DeepSpeed refuses ZeRO-2 under pipeline
/// parallelism, and PyTorch's pipeline schedules with FSDP (torchtitan) turn
/// gradient sync off for all but the last micro-batch.
bool zero2_reduces_every_micro_batch(const Job& job);
/// Bytes of one activation element: 4 for fp32 training, else 2 (bf16/fp16;
/// fp8 training keeps activations in bf16).
double activation_element_bytes(const Job& job);
/// Bytes of one stored weight element: 4 for fp32 training, else 2.
double weight_element_bytes(const Job& job);
/// Bytes of one gradient element (options.grad_format).
double grad_element_bytes(const Job& job);

// ---- Layers --------------------------------------------------------------

/// Whether global layer `layer` (0-based) has a mixture-of-experts MLP: MoE
/// models past their dense_layers, every interleave_step-th layer (HF
/// moe_layers = interleave_step-1, 2*interleave_step-1, ...).
bool is_moe_layer(const ModelShape& model, int64_t layer);
/// Whether layer `layer` uses sliding-window attention.
bool is_sliding_layer(const ModelShape& model, int64_t layer);
/// Layers with a dense MLP (all of them without MoE).
int64_t dense_layer_count(const ModelShape& model);

/// What sets a layer's ops apart from another's; layers of equal kind run
/// the same ops.
struct LayerKind {
  bool moe = false;             ///< MoE MLP, else dense
  bool sliding = false;         ///< sliding-window attention
  bool full_recompute = false;  ///< recomputed in full (recompute.full_layers)
  auto operator<=>(const LayerKind&) const = default;
};
/// Runs of consecutive layers of one kind, in order.
struct LayerRun {
  LayerKind kind;
  int64_t count = 0;
  auto operator<=>(const LayerRun&) const = default;
};

/// The kind of a multi-token-prediction module's transformer layer (that of
/// the model's last layer; it is never recomputed in full).
LayerKind mtp_layer_kind(const Job& job);

/// One model chunk (a contiguous layer range run by one pipeline stage).
struct ChunkInfo {
  int64_t stage = 0;           ///< pipeline stage (pp coordinate)
  int64_t virtual_index = 0;   ///< chunk index on its stage, 0..chunks_per_stage-1
  int64_t model_chunk = 0;     ///< position in the model (virtual_index * pp + stage)
  int64_t layer_begin = 0;     ///< first global layer index
  int64_t layer_end = 0;       ///< one past the last
  bool has_embedding = false;  ///< token (and position) embeddings (model chunk 0 by default)
  bool has_head = false;       ///< final norm, output layer, loss (last model chunk by default)
  int64_t mtp = 0;             ///< multi-token-prediction modules (with the head by default)
  int64_t layers() const { return layer_end - layer_begin; }
};

/// The kinds of layers [layer_begin, layer_end) of `chunk`, as runs.
std::vector<LayerRun> layer_runs(const Job& job, const ChunkInfo& chunk, int64_t layer_begin,
                                 int64_t layer_end);

/// Model chunks per pipeline rank: virtual_stages, or 2 for DualPipe (the
/// stage of each direction).
int64_t chunks_per_stage(const Job& job);
/// Model chunks in the model: pp * virtual_stages, or pp for DualPipe.
int64_t model_chunk_count(const Job& job);

/// Transformer layers of each model chunk, in model order (pp * v entries).
///
/// Rule for layer counts that do not divide evenly: every chunk gets
/// q = ceil(L / (pp*v)) layers, and the surplus q*pp*v - L is taken away one
/// layer at a time from the chunks at the ends of the model, alternating
/// first, last, second, second-to-last, ... These end chunks also hold the
/// embeddings and the output layer + loss, so they are the natural ones to
/// lighten. Llama 3 405B (126 layers, pp 16): 7, 8 x 14, 7 -- one fewer on
/// the first and the last stage, as Meta ran it. An explicit
/// `plan.layout` gives the counts instead.
std::vector<int64_t> chunk_layer_counts(const Job& job);
/// The chunks of one stage, virtual_index ascending. DualPipe: stage r
/// holds model chunk r (virtual index 0, the forward direction's stage) and
/// model chunk pp-1-r (virtual index 1, the reverse direction's).
std::vector<ChunkInfo> stage_chunks(const Job& job, int64_t stage);
/// All chunks in model order.
std::vector<ChunkInfo> model_chunks(const Job& job);

}  // namespace podsim::strategies
