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
  /// Score elements one head of one sequence computes (causal: halved).
  double score_elements() const;
};

/// A bandwidth-bound kernel: bytes read + written, and (small) arithmetic.
struct MemoryBoundShape {
  double bytes = 0;
  double flops = 0;
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
struct CollectiveShape {
  Dim dim = Dim::kTp;
  CollectiveKind kind = CollectiveKind::kAllReduce;
  double bytes = 0;
  int32_t overlap_op = -1;
};

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
  /// GPU kernels one instance launches (an eager chain of PyTorch ops is one
  /// op of several kernels): each pays its launch and memory latency, and
  /// the host issues each.
  int32_t kernels = 1;

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
  double dtensor_dispatches = 0;      ///< ops dispatched tensor by tensor through DTensor
};

/// What one task runs. Many tasks share one work (all forwards of a chunk).
struct Work {
  std::string name;
  std::vector<Segment> segments;
  HostWork host;

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
  double e = 2;  ///< activation element bytes
  sim::NumberFormat gemm_format = sim::NumberFormat::kBf16;
  sim::NumberFormat act_format = sim::NumberFormat::kBf16;
  bool sp = false, flash = true, dropout = false, biases = false, learned_positions = false;
};
RankShape rank_shape(const Job& job);

/// One transformer layer's ops for `pass` (per rank, one micro-batch), in
/// execution order. kRecompute is empty for RecomputeMode::kNone; the
/// attention core (with its CP communication) for kSelective; the whole
/// forward layer, TP communication included, for kFull and kEvery.
std::vector<Op> layer_ops(const Job& job, Pass pass);
/// Token (+ position) embedding, first model chunk. kRecompute: empty.
std::vector<Op> embedding_ops(const Job& job, Pass pass);
/// Final norm, output layer (logits over the vocabulary) and softmax
/// cross-entropy loss, last model chunk. kRecompute: empty.
std::vector<Op> head_ops(const Job& job, Pass pass);
/// The optimizer step over `params` parameters (those this rank updates).
std::vector<Op> optimizer_ops(const Job& job, double params);

/// A work for a layer range of one chunk: embedding (if `embedding`), the
/// layer ops repeated `layers` times, head (if `head`); order reversed for
/// backward passes.
Work make_work(const Job& job, Pass pass, int64_t layers, bool embedding, bool head);

}  // namespace podsim::strategies
