#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/number_format.h"
#include "strategies/job.h"

namespace podsim::strategies {

// The work of one rank, as operations with exact FLOPs and bytes, in the terms
// the hardware models price: matrix products, attention kernels, memory-bound
// kernels and collectives. Everything is per rank (after TP/CP/SP/EP sharding)
// and per micro-batch of b = training.micro_batch sequences of s tokens.

enum class OpKind : uint8_t { kGemm, kAttention, kMemoryBound, kCollective };

/// What an op computes. A backward work lists input-gradient ("dgrad") and
/// weight-gradient ("wgrad") ops in execution order; zero-bubble schedules run
/// them as separate tasks.
enum class OpRole : uint8_t { kForward, kInputGrad, kWeightGrad, kRecompute, kOptimizer };

enum class CollectiveKind : uint8_t {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kAllToAll,
  kSendRecv,
  kBroadcast
};

/// C[m x n] = A[m x k] * B[k x n], `batch` independent products (2*m*n*k
/// FLOPs each).
struct GemmShape {
  int64_t m = 0, n = 0, k = 0, batch = 1;
};

/// One attention kernel call. Causal masks are bottom-right aligned (the
/// queries are the last q_len positions of the kv_len keys, flash-attn's
/// convention), so a causal call covers q_len*kv_len - q_len^2/2 scores.
struct AttentionShape {
  int64_t batch = 0, heads = 0, kv_heads = 0, q_len = 0, kv_len = 0, head_dim = 0;
  bool causal = false;
  bool backward = false;
  bool flash = true;
  /// Causal only: a query sees at most its last `window` keys; 0 = all.
  int64_t window = 0;
  /// Score elements one head of one sequence computes (causal: halved).
  double score_elements() const;
};

/// A bandwidth-bound kernel: bytes read + written, and (small) arithmetic.
struct MemoryBoundShape {
  double bytes = 0;
  double flops = 0;
  /// Fraction of a hand-written kernel's bandwidth the framework's kernel
  /// reaches (ElementwisePolicy::compiled_norm_*_bandwidth), in (0, 1].
  double bandwidth_fraction = 1;
};

/// A collective inside a work, among the rank's group of `dim` (tp, cp or ep).
///
/// `bytes` is the size nccl-tests reports for the operation, per rank:
/// all-reduce and broadcast: the buffer; all-gather: the gathered output;
/// reduce-scatter: the full input; all-to-all: the whole send buffer;
/// send/recv: the message.
///
/// `overlap_op`: index (in the same op list) of a compute op this collective
/// runs concurrently with, or -1: it runs between its neighbours in order and
/// blocks the compute stream. The two ops of an overlap pair have the same
/// `count` and run as `count` steps; step i runs instance i of both at once,
/// and step i+1 starts when both are done (ring attention: send K/V chunk i+1
/// while computing block i). Ops after the pair wait for both.
/// Which group of the rank an in-work collective runs among.
enum class InWorkGroup : uint8_t {
  kOfDim,       ///< the group of its `dim` (tp, cp or ep)
  kExpertTp,    ///< the expert-tensor-parallel group (MoE parallel folding)
  kExpertTpEp,  ///< expert-TP x EP: every rank one MoE layer's tokens can reach
  kStage,       ///< every rank of the pipeline stage (tp x cp x dp; reported under dp)
};

/// An MoE dispatch or combine: what the lowering needs to price a fused
/// (DeepEP-style) one, which sends a token once per destination node.
struct TokenDispatch {
  double tokens = 0;       ///< tokens this rank routes
  double token_bytes = 0;  ///< bytes of one token on the wire
  int64_t top_k = 0;
  bool per_node = false;  ///< one network copy per destination node, forwarded over NVLink
};

struct CollectiveShape {
  Dim dim = Dim::kTp;
  CollectiveKind kind = CollectiveKind::kAllReduce;
  double bytes = 0;
  int32_t overlap_op = -1;
  InWorkGroup group = InWorkGroup::kOfDim;
  TokenDispatch dispatch = {};  ///< MoE dispatch / combine all-to-alls (tokens > 0)
  /// SMs its kernels hold while it runs; -1: an NCCL kernel's channels
  /// (hwmodels::kernel_sms of its group).
  int64_t kernel_sms = -1;
  /// The GEMM it overlaps (overlap_op) runs as this many chunks of its rows
  /// back to back, one per step of the collective (TP overlap's
  /// decomposition), each a kernel with its own waves.
  int32_t gemm_chunks = 1;
};

/// The parts of an MoE block, for the report's breakdown.
enum class MoePart : uint8_t {
  kNone,
  kRouter,    ///< gating GEMM, top-k / scores, token counts
  kPermute,   ///< permute, local sort, unsort, unpermute (memory-bound)
  kDispatch,  ///< dispatch and combine: all-to-all (and expert-TP gather / reduce)
  kExperts,   ///< routed experts: grouped GEMMs and their activation
  kShared,    ///< shared experts
};
inline constexpr int kMoeParts = 6;

/// One operation, run `count` times back to back.
struct Op {
  std::string name;
  OpKind kind = OpKind::kMemoryBound;
  OpRole role = OpRole::kForward;
  int64_t count = 1;
  /// Arithmetic format (matrix products in fp8 under fp8 training; attention,
  /// memory-bound kernels and activations in bf16, or fp32 for fp32 training).
  sim::NumberFormat format = sim::NumberFormat::kBf16;
  GemmShape gemm;              ///< kGemm
  AttentionShape attention;    ///< kAttention
  MemoryBoundShape memory;     ///< kMemoryBound
  CollectiveShape collective;  ///< kCollective
  /// FLOPs one instance executes (hardware FLOPs: flash backward's recompute
  /// of the scores, non-flash causal attention's full s*s products included).
  double flops = 0;
  /// FLOPs one instance contributes to model FLOPs: matrix products of the
  /// forward and backward pass (causal attention halved); 0 for recompute,
  /// memory-bound ops and collectives.
  double model_flops = 0;
  /// Forward ops: activation bytes this op keeps for the backward pass, per
  /// instance (the inputs its backward reads; a tensor two ops need is
  /// counted at the first). Dropped under full recompute.
  double saved_bytes = 0;
  /// Part of the saved bytes internal to the attention core (scores,
  /// softmax, dropout mask and output, flash's log-sum-exp): dropped under
  /// selective recompute too.
  double saved_core_bytes = 0;
  /// Attention-core op: recomputed under selective recompute.
  bool attention_core = false;
  /// Which part of a mixture-of-experts block the op is (kNone elsewhere),
  /// so that reports can say where an MoE layer's time went.
  MoePart moe_part = MoePart::kNone;
  /// Routed-expert work on the busiest rank is `imbalance` times the evenly
  /// loaded share (>= 1; moe_imbalance.h). A grouped GEMM's `balanced_gemm`
  /// is its shape under even load, so that the excess can be priced.
  double imbalance = 1;
  GemmShape balanced_gemm;
  /// GPU kernels one instance launches (an eager chain of PyTorch ops is one
  /// op of several kernels): each pays its launch and memory latency, and
  /// the host issues each.
  int32_t kernels = 1;
  /// kGemm of batch > 1 issued as one GEMM per batch member (`kernels` of
  /// them), this many at a time on their own streams; 0: one batched kernel.
  int32_t concurrent_gemms = 0;
  /// The host waits for the GPU to finish what it has issued before it
  /// issues this op (it needs a value the GPU computes: a dropless MoE
  /// dispatch's split sizes), so the GPU idles while the next kernels are
  /// issued.
  bool host_sync = false;

  bool is_compute() const { return kind != OpKind::kCollective; }
};

/// A run of ops repeated `repeat` times (a transformer layer, the embedding,
/// the output layer and loss).
struct Segment {
  std::string name;
  int64_t repeat = 1;
  std::vector<Op> ops;
};

/// What the host does for a work besides issuing its kernels.
struct HostWork {
  int64_t compiled_region_calls = 0;  ///< calls into compiled regions (one per block and pass)
  int64_t hooked_units = 0;           ///< sharding-framework hook calls (per unit and pass)
  int64_t syncs = 0;                  ///< host synchronisations inside the work
  /// Rank slots of collectives called with per-rank tensor lists: the group
  /// size, once per such collective.
  double rank_list_entries = 0;
  double dtensor_dispatches = 0;  ///< ops dispatched tensor by tensor through DTensor
};

/// What one task runs. Many tasks share one work (all forwards of a chunk).
struct Work {
  std::string name;
  std::vector<Segment> segments;
  /// DualPipe's overlapped forward & backward: the expert-parallel
  /// communication of either half runs beside the other half's compute.
  bool overlap_ep_comm = false;
  HostWork host;
  /// Bytes copied over the host link beside the work's compute (activation
  /// offload): saved activations out to host memory in a forward, and
  /// fetched back for a backward. The link is full duplex.
  double host_copy_out_bytes = 0;
  double host_copy_in_bytes = 0;

  /// Hardware FLOPs of the whole work (collectives excluded).
  double flops() const;
  /// Model FLOPs of the whole work.
  double model_flops() const;
  /// Matrix-product FLOPs only (GEMM + attention), hardware.
  double matmul_flops() const;
  /// Sum over ops of count * bytes, by kind.
  double memory_bound_bytes() const;
  double collective_bytes(Dim dim) const;
};

/// Which ops of a layer a work holds.
enum class Pass : uint8_t {
  kForward,
  kBackward,        ///< input and weight gradients, interleaved as Megatron runs them
  kBackwardInput,   ///< zero-bubble "B"
  kBackwardWeight,  ///< zero-bubble "W"
  kRecompute,       ///< what the recompute mode runs again before the backward
};

/// Per-rank sizes after sharding, for one micro-batch.
struct RankShape {
  int64_t b = 0;            ///< sequences per micro-batch
  int64_t s = 0;            ///< full sequence length
  int64_t s_local = 0;      ///< tokens per sequence on this rank: s / cp
  int64_t tokens = 0;       ///< b * s_local
  int64_t norm_tokens = 0;  ///< tokens / tp with sequence parallelism, else tokens
  int64_t hidden = 0;
  int64_t heads = 0;     ///< heads / tp
  int64_t kv_heads = 0;  ///< kv_heads / tp, at least 1 (replicated when tp > kv_heads)
  int64_t head_dim = 0;
  int64_t ffn = 0;    ///< ffn_hidden / tp
  int64_t vocab = 0;  ///< ceil(vocab / tp) (no Megatron padding)
  int64_t tp = 1, cp = 1, ep = 1;
  int64_t etp = 1;  ///< expert tensor parallelism
  /// Tokens one rank routes in an MoE block: tokens / tp (Megatron needs
  /// sequence parallelism for MoE with tp > 1; each TP rank routes its part).
  int64_t moe_tokens = 0;
  double e = 2;  ///< activation element bytes
  sim::NumberFormat gemm_format = sim::NumberFormat::kBf16;
  sim::NumberFormat act_format = sim::NumberFormat::kBf16;
  bool sp = false, flash = true, dropout = false, biases = false, learned_positions = false;
};
RankShape rank_shape(const Job& job);

/// Whether fp8 GEMM `op` promotes its partial sums to fp32 as it
/// accumulates: a gradient GEMM (dgrad, wgrad) of a per-tensor-scaled
/// recipe whose software says so (Fp8Policy::gradient_accumulation).
/// Block-scaled recipes apply their scales per K block in every pass, and
/// their kernels' rates are not known apart from the per-tensor ones: no.
bool promotes_fp8_accumulation(const Job& job, const Op& op);

/// One transformer layer's ops for `pass` (per rank, one micro-batch), in
/// execution order. kRecompute is empty for RecomputeMode::kNone; the
/// attention core (with its CP communication) for kSelective; the whole
/// forward layer, TP communication included, for kFull and kEvery and for a
/// layer of kind.full_recompute.
std::vector<Op> layer_ops(const Job& job, const LayerKind& kind, Pass pass);

/// A layer's saved tensors under a recompute policy that names what it keeps:
/// Megatron's --recompute-modules, or MaxText's custom remat with host offload.
struct PolicyTensors {
  std::vector<double> kept;        ///< kept on the device for the backward pass
  std::vector<double> recomputed;  ///< brought back by the recompute before the backward
  double offloaded_bytes = 0;      ///< saved to host memory (and fetched back), per micro-batch
};
/// Whether `job`'s layers follow such a policy (recompute_modules with
/// selective recompute, or activation_offload).
bool named_recompute_policy(const Job& job);
/// The tensors of the layer whose forward ops are `forward`, under that policy.
PolicyTensors policy_tensors(const Job& job, const std::vector<Op>& forward);
/// The ops of the model's most common layer kind (an MoE layer for MoE
/// models), for tools that look at one typical layer.
std::vector<Op> layer_ops(const Job& job, Pass pass);
/// That most common layer kind.
LayerKind typical_layer_kind(const Job& job);
/// One multi-token-prediction module (DeepSeek-V3 MTP): embedding of the
/// shifted tokens, two norms, the 2h -> h projection, one transformer layer
/// of mtp_layer_kind, the final norm, output layer and loss. kRecompute: empty.
std::vector<Op> mtp_ops(const Job& job, Pass pass);
/// Token (+ position) embedding, first model chunk. kRecompute: empty.
std::vector<Op> embedding_ops(const Job& job, Pass pass);
/// Final norm, output layer (logits over the vocabulary) and softmax
/// cross-entropy loss, last model chunk. kRecompute: empty.
std::vector<Op> head_ops(const Job& job, Pass pass);
/// The optimizer step over `params` parameters in `tensors` tensors (those
/// this rank updates), as the framework runs it (SoftwarePolicy::optimizer):
/// the global norm of gradient clipping, then the update with the
/// framework's copies around it, issued after the norm reaches the host
/// where clipping reads it there.
std::vector<Op> optimizer_ops(const Job& job, double params, double tensors);
/// Host dispatches through DTensor of that step, tensor by tensor
/// (OptimizerPolicy::dtensor_params; HostWork::dtensor_dispatches).
double optimizer_dtensor_dispatches(const Job& job, double tensors);

/// What a work covers: a chunk's embedding, runs of layers, MTP modules and
/// head.
struct WorkRange {
  std::vector<LayerRun> runs;
  bool embedding = false;
  bool head = false;
  int64_t mtp = 0;
  /// The range holds its pipeline chunk's first / last layer: where the fp8
  /// autocast region around the chunk's layers reduces its amaxes (backward
  /// / forward; fp8_amax_reduction in workload.cc).
  bool chunk_first_layer = false, chunk_last_layer = false;
  auto operator<=>(const WorkRange&) const = default;
};
/// A work for a range: embedding, each run's layer ops repeated `count`
/// times, the MTP modules, the head; order reversed for backward passes.
Work make_work(const Job& job, Pass pass, const WorkRange& range);
/// A work for `layers` layers of the typical kind (uniform models: any
/// layers), embedding and head as asked, no MTP.
Work make_work(const Job& job, Pass pass, int64_t layers, bool embedding, bool head);

}  // namespace podsim::strategies
