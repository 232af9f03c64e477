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
/// Ranks holding the same dense weights: dp * cp (Megatron reduces dense
/// gradients over the data-parallel group "with context parallel").
int64_t grad_group_size(const Job& job);
/// Expert data-parallel size: dp * cp / ep.
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

/// One model chunk (a contiguous layer range run by one pipeline stage).
struct ChunkInfo {
  int64_t stage = 0;           ///< pipeline stage (pp coordinate)
  int64_t virtual_index = 0;   ///< chunk index on its stage, 0..v-1
  int64_t model_chunk = 0;     ///< position in the model: virtual_index * pp + stage
  int64_t layer_begin = 0;     ///< first global layer index
  int64_t layer_end = 0;       ///< one past the last
  bool has_embedding = false;  ///< model chunk 0: token (and position) embeddings
  bool has_head = false;       ///< last model chunk: final norm, output layer, loss
  int64_t layers() const { return layer_end - layer_begin; }
};

/// Transformer layers of each model chunk, in model order (pp * v entries).
///
/// Rule for layer counts that do not divide evenly: every chunk gets
/// q = ceil(L / (pp*v)) layers, and the surplus q*pp*v - L is taken away one
/// layer at a time from the chunks at the ends of the model, alternating
/// first, last, second, second-to-last, ... These end chunks also hold the
/// embeddings and the output layer + loss, so they are the natural ones to
/// lighten. Llama 3 405B (126 layers, pp 16): 7, 8 x 14, 7 -- one fewer on
/// the first and the last stage, as Meta ran it.
std::vector<int64_t> chunk_layer_counts(const Job& job);
/// The chunks of one stage, virtual_index ascending.
std::vector<ChunkInfo> stage_chunks(const Job& job, int64_t stage);
/// All chunks in model order.
std::vector<ChunkInfo> model_chunks(const Job& job);

}  // namespace podsim::strategies
