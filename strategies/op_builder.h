#pragma once

// How op lists are built (workload.cc and its pieces; internal to
// strategies/): the Builder that appends ops with their FLOPs and roles, the
// arithmetic tallies of memory-bound kernels, and the pieces a layer is made
// of -- norms, residuals, tensor-parallel linears and activations
// (layer_pieces.cc), the attention core with its context-parallel
// communication (attention_ops.cc), the mixture-of-experts block
// (moe_ops.cc), and what a recompute policy runs again (recompute_policy.cc).

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sim/to_double.h"
#include "strategies/job.h"
#include "strategies/workload.h"

namespace podsim::strategies::ops {

// Arithmetic per element of the memory-bound kernels. These ops are bound by
// memory bandwidth on every GPU podsim models (their FLOPs per byte are far
// below any GPU's ratio), so the counts are rough operation tallies, not
// calibrated values: LayerNorm mean+variance+scale+shift ~7, RMSNorm ~4,
// tanh-GeLU ~8, SiLU*up ~5, softmax (max, sub, exp, sum, div) ~5, dropout 2,
// residual add 1; backward passes about 1.5-2x.
inline constexpr double kLayerNormFlops = 7, kRmsNormFlops = 4;
inline constexpr double kGeluFlops = 8, kSwigluFlops = 5, kSoftmaxFlops = 5;
inline constexpr double kDropoutFlops = 2, kResidualFlops = 1, kRopeFlops = 3;
inline constexpr double kBackwardFlopsFactor = 2;
// Adam per parameter: two moment updates (7), bias corrections (2), sqrt,
// eps, divide (3), update with weight decay (3). Momentum SGD: 4.
inline constexpr double kAdamFlops = 15, kSgdFlops = 4;
// Flash attention's backward recomputes the scores: 5 matrix products of the
// score shape against the forward's 2.
inline constexpr double kFlashBackwardFactor = 2.5;

/// Builds op lists; knows the rank shape and the role of what it adds.
class Builder {
 public:
  Builder(const RankShape& r, OpRole role) : r_(r), role_(role) {}

  int32_t size() const { return static_cast<int32_t>(ops_.size()); }
  std::vector<Op> take() { return std::move(ops_); }
  std::vector<Op>& ops() { return ops_; }
  void set_role(OpRole role) { role_ = role; }
  OpRole role() const { return role_; }

  /// A matrix product; `model_fraction` of its FLOPs count as model FLOPs
  /// (0.5 for the explicit score/AV products of causal attention).
  Op& gemm(std::string name, int64_t m, int64_t n, int64_t k, int64_t batch = 1,
           double model_fraction = 1.0) {
    Op& op = add(std::move(name), OpKind::kGemm);
    op.format = r_.gemm_format;
    op.gemm = {m, n, k, batch};
    op.flops = 2.0 * d(m) * d(n) * d(k) * d(batch);
    op.model_flops = model_fraction * op.flops;
    fix_model_flops(op);
    return op;
  }
  /// A grouped GEMM (`batch` experts) whose shape rounds an average row
  /// count up; its FLOPs are the exact `flops` of the balanced routing.
  Op& grouped_gemm(std::string name, int64_t m, int64_t n, int64_t k, int64_t batch, double flops) {
    Op& op = gemm(std::move(name), m, n, k, batch);
    op.flops = flops;
    op.model_flops = flops;
    fix_model_flops(op);
    return op;
  }
  /// A flash-attention call; `head_dim` is the mean of the query/key and
  /// value head sizes (MLA: (192 + 128) / 2), which sets its FLOPs.
  Op& attention(std::string name, int64_t heads, int64_t kv_heads, int64_t q_len, int64_t kv_len,
                bool causal, bool backward, int64_t head_dim, int64_t window = 0) {
    Op& op = add(std::move(name), OpKind::kAttention);
    op.format = r_.act_format;
    op.attention = {r_.b, heads, kv_heads, q_len, kv_len, head_dim, causal, backward, true, window};
    const double forward = 4.0 * d(r_.b) * d(heads) * d(head_dim) * op.attention.score_elements();
    op.flops = backward ? kFlashBackwardFactor * forward : forward;
    op.model_flops = backward ? 2.0 * forward : forward;
    op.attention_core = true;
    fix_model_flops(op);
    return op;
  }
  /// A memory-bound op of `kernels` kernels moving `bytes` in all.
  Op& memory(std::string name, double bytes, double flops, int32_t kernels = 1) {
    Op& op = add(std::move(name), OpKind::kMemoryBound);
    op.format = r_.act_format;
    op.memory = {bytes, flops};
    op.flops = flops;
    op.kernels = kernels;
    return op;
  }
  /// A collective; returns nullptr (adds nothing) when the group has one rank.
  Op* collective(std::string name, Dim dim, CollectiveKind kind, double bytes,
                 int32_t overlap_op = -1) {
    if (group_size(dim) <= 1) return nullptr;
    Op& op = add(std::move(name), OpKind::kCollective);
    op.format = r_.act_format;
    op.collective = {dim, kind, bytes, overlap_op, InWorkGroup::kOfDim, {}};
    return &op;
  }
  /// A collective of the MoE block among one of the expert groups (reported
  /// under ep); nullptr when that group has one rank.
  Op* expert_collective(std::string name, InWorkGroup group, CollectiveKind kind, double bytes) {
    const int64_t size = group == InWorkGroup::kExpertTp     ? r_.etp
                         : group == InWorkGroup::kExpertTpEp ? r_.etp * r_.ep
                                                             : group_size(Dim::kEp);
    if (size <= 1) return nullptr;
    Op& op = add(std::move(name), OpKind::kCollective);
    op.format = r_.act_format;
    op.collective = {Dim::kEp, kind, bytes, -1, group, {}};
    return &op;
  }
  /// A collective among every rank of the stage (`ranks` of them, tp x cp x
  /// dp; reported under dp); nullptr when the stage has one rank.
  Op* stage_collective(std::string name, CollectiveKind kind, double bytes, int64_t ranks) {
    if (ranks <= 1) return nullptr;
    Op& op = add(std::move(name), OpKind::kCollective);
    op.format = r_.act_format;
    op.collective = {Dim::kDp, kind, bytes, -1, InWorkGroup::kStage, {}};
    return &op;
  }
  /// Tags the ops added from now on as part `part` of an MoE block.
  void set_moe_part(MoePart part) { moe_part_ = part; }
  /// The next op added waits for a host synchronisation (Op::host_sync).
  void host_sync_next() { host_sync_next_ = true; }
  int64_t group_size(Dim dim) const {
    switch (dim) {
      case Dim::kTp:
        return r_.tp;
      case Dim::kCp:
        return r_.cp;
      case Dim::kEp:
        return r_.ep;
      case Dim::kDp:
      case Dim::kPp:
        return 1;  // not used inside works: the schedule's comm tasks carry those
    }
    return 1;
  }

 private:
  Op& add(std::string name, OpKind kind) {
    Op op;
    op.name = std::move(name);
    op.kind = kind;
    op.role = role_;
    op.moe_part = moe_part_;
    op.host_sync = host_sync_next_;
    host_sync_next_ = false;
    ops_.push_back(std::move(op));
    return ops_.back();
  }
  void fix_model_flops(Op& op) const {
    if (role_ == OpRole::kRecompute || role_ == OpRole::kOptimizer) op.model_flops = 0;
  }

  const RankShape r_;  // a copy, so that a builder made from a temporary shape stays valid
  OpRole role_;
  MoePart moe_part_ = MoePart::kNone;
  bool host_sync_next_ = false;
  std::vector<Op> ops_;
};

/// The attention of one layer on one rank: what the core sees and stores.
struct AttnDims {
  int64_t heads = 0;     ///< query heads on this rank
  int64_t kv_heads = 0;  ///< key/value heads on this rank
  int64_t head_dim = 0;  ///< kernel head size (mean of query/key and value sizes)
  double q_width = 0;    ///< query elements per token (heads x query/key head size)
  double kv_width = 0;   ///< key + value elements per token
  double o_width = 0;    ///< attention output elements per token (heads x value size)
  int64_t window = 0;    ///< sliding window, 0 = full causal
};
/// The attention of a layer of `kind` on ranks of shape `r`.
AttnDims attention_dims(const Job& job, const RankShape& r, const LayerKind& kind);

/// The linears' GEMMs run quantized and pay their operands' casts: fp8
/// training under a framework that has fp8, fp4 (NVFP4), or int8 under
/// AQT's recipe (int8 without a recipe prices the products alone).
inline bool quantized_linears(const Job& job) {
  switch (job.training.precision) {
    case sim::NumberFormat::kFp8:
      return job.software.fp8.recipe != Fp8Recipe::kNone;
    case sim::NumberFormat::kFp4:
      return true;
    case sim::NumberFormat::kInt8:
      return job.training.recipe == PrecisionRecipe::kAqtInt8;
    default:
      return false;
  }
}

inline double norm_flops(const Job& job) {
  return job.model.norm == NormKind::kLayerNorm ? kLayerNormFlops : kRmsNormFlops;
}

/// Pairs a collective (if one was added) with the compute op at `target`
/// (-1: no overlap). Call before adding the next op: it invalidates pointers.
inline void pair(Op* collective, int32_t target) {
  if (collective != nullptr) collective->collective.overlap_op = target;
}

// ---- Layer pieces (layer_pieces.cc) -------------------------------------------

// ---- Element-wise pieces, as the framework implements them (elementwise_ops.cc) ----

/// Where an op sits: inside a transformer block, or around the blocks (the
/// final norm and the output layer), which a compiler that compiles block by
/// block (torch.compile per TransformerBlock) leaves eager and a whole-step
/// compiler (XLA) does not, and which TP overlap inside the blocks (TE
/// modules, compiled blocks) does not reach.
enum class CodeRegion : uint8_t { kBlock, kAroundBlocks };

/// Norm forward; saves its input.
void norm_forward(const Job& job, const RankShape& r, Builder& b, const char* name,
                  CodeRegion region = CodeRegion::kBlock);
/// Norm backward, with the residual-gradient accumulation.
void norm_backward(const Job& job, const RankShape& r, Builder& b, const char* name,
                   CodeRegion region = CodeRegion::kBlock);
/// (bias +) dropout + residual add after a block; saves the dropout mask.
void residual_forward(const Job& job, const RankShape& r, Builder& b, const char* name);
void residual_backward(const Job& job, const RankShape& r, Builder& b, const char* name);
/// The residual add after attention and the norm before the MLP: one
/// kernel when a compiler fuses the chain, else the two pieces.
void residual_norm_forward(const Job& job, const RankShape& r, Builder& b, const char* residual,
                           const char* norm);
/// Rotary embedding of q and k (Llama style; nothing with learned
/// positions), and the copy of grouped K/V heads to the full head count
/// where the framework makes one.
void rope_forward(const Job& job, const RankShape& r, Builder& b);
void rope_backward(const Job& job, const RankShape& r, Builder& b);
/// Input of a column-parallel linear: gathered over TP with SP.
double column_input_saved(const RankShape& r);
double full_hidden_bytes(const RankShape& r);
// Tensor-parallel collectives beside GEMMs. With options.overlap_tp the
// software's overlap (SoftwarePolicy::tp_overlap) runs those of the
// transformer blocks (TE modules, torch.compile'd blocks) beside their GEMMs;
// the output layer outside the blocks (`region` kAroundBlocks) keeps plain
// NCCL collectives.

/// The all-gather before a column-parallel linear (SP), with TP overlap.
void sp_gather_forward(const Job& job, const RankShape& r, Builder& b, const char* name,
                       CodeRegion region = CodeRegion::kBlock);
/// The reduction after a row-parallel linear at index `gemm_index`.
void tp_reduce_forward(const Job& job, const RankShape& r, Builder& b, const char* name,
                       int32_t gemm_index, double bytes);
/// Backward of a column-parallel linear Y = X W (X: tokens x in, W: in x out):
/// [re-gather X (SP) || dgrad] [reduce dX || wgrad], as Megatron overlaps them
/// (NCCL kernels, or the software's TP overlap).
void column_linear_backward(const Job& job, const RankShape& r, Builder& b, const std::string& name,
                            int64_t in, int64_t out, double model_fraction = 1.0,
                            CodeRegion region = CodeRegion::kBlock);
/// Backward of a row-parallel linear Y = X W: gather dY (SP; beside the dgrad
/// with TP overlap), dgrad, wgrad.
void row_linear_backward(const Job& job, const RankShape& r, Builder& b, const std::string& name,
                         int64_t in, int64_t out);
int64_t mlp_in_columns(const Job& job, int64_t ffn);
/// A clamped GLU's clamp on `elements` activation outputs, where it runs as
/// eager ops (ModelShape::clamped_glu, ElementwisePolicy::activation_clamp);
/// nullptr where it costs nothing of its own. Forward before the activation,
/// backward after the activation's backward.
Op* clamp_forward(const Job& job, const RankShape& r, Builder& b, const std::string& name,
                  double elements);
Op* clamp_backward(const Job& job, const RankShape& r, Builder& b, const std::string& name,
                   double elements);
/// Activation forward on rows x ffn; saves its input(s).
void activation_forward(const Job& job, const RankShape& r, Builder& b, const std::string& name,
                        double rows, int64_t ffn);
void activation_backward(const Job& job, const RankShape& r, Builder& b, const std::string& name,
                         double rows, int64_t ffn);
void dense_mlp_forward(const Job& job, const RankShape& r, Builder& b, const std::string& name,
                       int64_t ffn);
void dense_mlp_backward(const Job& job, const RankShape& r, Builder& b, const std::string& name,
                        int64_t ffn);

/// What a quantized linear casts before its GEMM (nothing unless quantized_linears):
/// its `input_elements`-element 16-bit input -- unless the norm before it
/// writes fp8 (`after_norm` and Fp8Policy::cast_fused_with_norm) -- and,
/// cast every call, its `weight_elements` weights.
void fp8_forward_casts(const Job& job, Builder& b, const std::string& name, double input_elements,
                       double weight_elements, bool after_norm);
/// Under current (tensor-wise) scaling, a sequence-parallel operand cast
/// before its TP all-gather -- a column-parallel linear's input, a
/// row-parallel linear's output gradient -- first all-reduces its amax over
/// the TP group, so that every shard shares one scale.
void fp8_sequence_parallel_amax(const Job& job, const RankShape& r, Builder& b,
                                const std::string& name);
/// What Transformer Engine's delayed scaling runs when the fp8 autocast
/// region around a chunk's layers closes (forward) and when the backward of
/// its first fp8 module ends (backward), for the region's `gemms` fp8 GEMMs;
/// nothing under other recipes or Fp8Policy::amax_all_reduce off.
std::vector<Op> fp8_amax_reduction_ops(const Job& job, double gemms, bool forward);
/// The cast of a linear's `elements`-element output gradient before its fp8
/// dgrad and wgrad GEMMs.
void fp8_grad_cast(const Job& job, Builder& b, const std::string& name, double elements);

// ---- Attention core (attention_ops.cc) ----------------------------------------

/// The attention core of a layer's forward: scores, softmax and the weighted
/// sum (flash or explicit), with context-parallel communication (ring,
/// Ulysses, all-gather).
void attention_core_forward(const Job& job, const RankShape& r, const AttnDims& a, Builder& b);
/// Its backward.
void attention_core_backward(const Job& job, const RankShape& r, const AttnDims& a, Builder& b);
/// The projections of a layer's attention in front of the core, from the
/// normed input (with its SP gather): QKV (with its fp8 casts and RoPE), or
/// MLA's down-projections, latent norms, up-projections and RoPE.
void attention_projections_forward(const Job& job, const RankShape& r, Builder& b);
void attention_projections_backward(const Job& job, const RankShape& r, Builder& b);

// ---- Mixture of experts (moe_ops.cc) ------------------------------------------

/// Router, all-to-all dispatch, grouped expert GEMMs, combine; shared
/// experts as a dense MLP beside them.
void moe_forward(const Job& job, const RankShape& r, Builder& b);
/// Its backward.
void moe_backward(const Job& job, const RankShape& r, Builder& b);

/// Keeps the ops `keep` accepts, remapping overlap targets (a collective whose
/// target is dropped no longer overlaps).
template <typename Keep>
std::vector<Op> filter_ops(const std::vector<Op>& ops, Keep keep) {
  std::vector<int32_t> index(ops.size(), -1);
  std::vector<Op> out;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (!keep(ops[i])) continue;
    index[i] = static_cast<int32_t>(out.size());
    out.push_back(ops[i]);
  }
  for (Op& op : out) {
    if (op.kind == OpKind::kCollective && op.collective.overlap_op >= 0) {
      op.collective.overlap_op = index[static_cast<size_t>(op.collective.overlap_op)];
    }
  }
  return out;
}

/// Appends `more` to `ops`: each list numbers its overlap targets from its
/// own start, so `more`'s move by the ops already in `ops`.
inline void append_ops(std::vector<Op>& ops, std::vector<Op> more) {
  const auto offset = static_cast<int32_t>(ops.size());
  for (Op& op : more) {
    if (op.kind == OpKind::kCollective && op.collective.overlap_op >= 0) {
      op.collective.overlap_op += offset;
    }
    ops.push_back(std::move(op));
  }
}

/// The ops of a layer's forward (`forward`, built for `r` and `kind`) that
/// run again before its backward under the plan's recompute or offload
/// policy, as OpRole::kRecompute (recompute_policy.cc).
std::vector<Op> recomputed_forward(const Job& job, const RankShape& r, const LayerKind& kind,
                                   std::vector<Op> forward);

}  // namespace podsim::strategies::ops
