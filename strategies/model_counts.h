#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "strategies/job.h"
#include "strategies/model.h"
#include "strategies/workload.h"

namespace podsim::strategies {

// Counting the model: its parameters (whole, and per rank of a stage after
// TP/PP/EP sharding) and the FLOPs of one step under the conventions reports
// and papers use.

/// Parameter counts of the whole model (no sharding).
struct ParamCount {
  double embedding = 0;  ///< token embedding table
  double positions = 0;  ///< learned position table (seq_len rows), GPT style
  // One layer of the model's typical kind (typical_layer_kind: an MoE layer
  // of an MoE model), biases included:
  double per_layer = 0;
  double per_layer_active = 0;  ///< only top_k + shared experts counted
  double per_layer_matmul = 0;  ///< weights of the layer's matrix products (active)
  double per_layer_biases = 0;  ///< linear and LayerNorm biases
  double layers_matmul = 0;     ///< matrix-product weights one token uses, all layers
  double final_norm = 0;
  double output = 0;  ///< output layer (0 when tied)
  double total = 0;   ///< without multi-token prediction (as models are quoted)
  double active = 0;  ///< parameters one token uses (MoE)
  double biases = 0;  ///< all bias parameters (linear + LayerNorm beta)
  /// Multi-token-prediction modules (their own weights; embedding and output
  /// layer are shared).
  double mtp = 0;
  double total_excluding_biases() const { return total - biases; }
};
/// `seq_len` sizes the learned position table of GPT-style models.
ParamCount count_parameters(const ModelShape& model, int64_t seq_len);

/// Parameters one rank of `stage` holds (TP/PP/EP sharded, before ZeRO).
struct StageParams {
  double dense = 0;   ///< replicated across the dp*cp group
  double expert = 0;  ///< replicated across the expert-dp group
  double total() const { return dense + expert; }
};
StageParams stage_parameters(const Job& job, int64_t stage);
/// Parameter tensors held by one rank of `stage` (every chunk's).
double stage_parameter_tensors(const Job& job, int64_t stage);
/// Parameters of one layer of `kind` on one rank (dense part and expert part).
StageParams layer_parameters(const Job& job, const LayerKind& kind);
/// ... of the typical layer kind.
StageParams layer_parameters(const Job& job);
/// Parameters of one multi-token-prediction module on one rank (its layer,
/// norms and projection; not the shared embedding and output layer).
StageParams mtp_parameters(const Job& job);
/// Parameters of the pieces a chunk (or part of one) holds: layer runs,
/// embedding, head, MTP modules (with an embedding copy when the MTP sits
/// apart from the embedding, as Megatron keeps one on the last stage).
StageParams range_parameters(const Job& job, const WorkRange& range);
/// Parameters of the embedding / head on one rank of their stage.
StageParams embedding_parameters(const Job& job);
StageParams head_parameters(const Job& job);

/// One parameter tensor on one rank (TP/EP sharded): its elements, and
/// whether it is an expert weight (replicated over the expert-data-parallel
/// group rather than dp*cp).
struct ParamTensor {
  double elements = 0;
  bool expert = false;
};
/// The parameter tensors of one layer of `kind` / the embedding / the head
/// / one MTP module / a range on one rank; their sums are layer_parameters()
/// etc. A range's are in backward order: head, MTP modules, layers (last
/// first), embedding.
std::vector<ParamTensor> layer_parameter_tensors(const Job& job, const LayerKind& kind);
std::vector<ParamTensor> embedding_parameter_tensors(const Job& job);
std::vector<ParamTensor> head_parameter_tensors(const Job& job);
std::vector<ParamTensor> mtp_parameter_tensors(const Job& job);
std::vector<ParamTensor> range_parameter_tensors(const Job& job, const WorkRange& range);
/// The same tensors in the same order, as groups repeated `times` (a run of
/// identical layers, the MTP modules): for sums that need not walk every
/// layer (a sweep's memory bound sums them for millions of plans).
void for_each_parameter_group(
    const Job& job, const WorkRange& range,
    const std::function<void(const std::vector<ParamTensor>& group, int64_t times)>& visit);
/// The range's dense tensors a ZeRO-3 sharding partitions: those of at least
/// software.data_parallel.persist_below_params elements (DeepSpeed's
/// persistence threshold keeps smaller ones whole on every rank).
int64_t partitioned_parameter_tensors(const Job& job, const WorkRange& range);

// ---- FLOP conventions -------------------------------------------------------

/// Model FLOPs of one optimizer step, whole job (the report's convention):
/// the exactly counted matrix-product FLOPs (GEMMs and attention) of the
/// forward and backward pass (input and weight gradients), without
/// recomputation, causal attention counted as executed by flash attention
/// (half the score matrix) whatever kernel runs, output layer included,
/// embedding lookups, norms, softmax, loss and optimizer excluded.
double model_flops_per_step(const Job& job);
/// Hardware FLOPs of one step, whole job: every matrix product executed,
/// recomputation and flash's backward recompute of scores included.
double hardware_flops_per_step(const Job& job);
/// The "6N + 12 l h s" convention (Kaplan/PaLM; the published MFU of most
/// sources): tokens * (6 N + 12 l (heads*head_dim) s), N the parameters
/// (embeddings counted when `include_embeddings`), the attention term halved
/// when `causal_halved`. For MoE, N counts the active parameters.
double flops_6n_convention(const Job& job, bool include_embeddings, bool causal_halved);
/// Megatron-LM SC21 eq. 3: 96 B s l h^2 (1 + s/(6h) + V/(16 l h)), which
/// counts a full-recompute forward (4 passes) and non-causal attention.
double flops_megatron_sc21(const Job& job);

}  // namespace podsim::strategies
