#pragma once

// Inside build_schedule (internal to strategies/): the layer ranges tasks
// cover -- whole chunks, ZeRO-3 units, gradient buckets (schedule_pieces.cc)
// -- and the Builder that lays out every simulated rank's tasks in program
// order (schedule_builder.cc), with the data-parallel communication it adds:
// gradient reductions and ZeRO parameter gathers (schedule_dp.cc).

#include <array>
#include <cstdint>
#include <limits>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "strategies/job.h"
#include "strategies/memory.h"
#include "strategies/model_counts.h"
#include "strategies/schedule.h"
#include "strategies/workload.h"

namespace podsim::strategies::schedule_detail {

inline constexpr TaskId kNoTask = std::numeric_limits<TaskId>::max();
inline constexpr int64_t kMegatronBucketFloor = 40'000'000;   // Megatron DDP default bucket
inline constexpr int64_t kMegatronBucketPerRank = 1'000'000;  // max(40M, 1M x dp size)

inline double d(int64_t v) { return static_cast<double>(v); }

// ---- Pieces: the layer ranges tasks cover (schedule_pieces.cc) -----------------

struct Piece {
  int64_t layer_begin = 0, layer_end = 0;
  bool embedding = false, head = false;
  int64_t mtp = 0;
  StageParams params;
  WorkRange range;           ///< the layer kinds it covers (the key of its works)
  double stored = 0;         ///< activation bytes kept per micro-batch
  double transient = 0;      ///< bytes a recompute of the piece brings back
  double weight_inputs = 0;  ///< saved inputs of its weight GEMMs (zero-bubble W)
  double output_grads = 0;   ///< gradients of those GEMMs' outputs
  int64_t layers() const { return layer_end - layer_begin; }
};

struct ChunkPlan {
  ChunkInfo info;
  Piece whole;
  std::vector<Piece> units;    ///< ZeRO-3 units, forward order
  std::vector<Piece> buckets;  ///< gradient buckets, backward order
};

/// The pieces of chunk `c`: the whole chunk, its ZeRO-3 units and its
/// gradient buckets, with their parameters and activation bytes.
ChunkPlan plan_chunk(const Job& job, const ChunkInfo& c);

// ---- The builder (schedule_builder.cc, schedule_dp.cc) -------------------------

class Builder {
 public:
  Builder(const Job& job, Scope scope);

  Schedule build();

 private:
  struct Stage {
    std::vector<ChunkPlan> chunks;
    std::vector<Slot> order;
    std::vector<int64_t> last_grad_slot;  ///< per chunk
  };
  struct Tables {
    std::vector<TaskId> f_first, f_last, send_next, b_first, b_last, send_prev;
  };

  // -- works and groups --
  int32_t work(Pass pass, const Piece& piece);
  /// DualPipe's overlapped pair: the forward of `forward` and the recompute
  /// and backward of `backward` as one work whose EP communication hides
  /// under its compute.
  int32_t pair_work(const Piece& forward, const Piece& backward);
  int32_t optimizer_work(double params);
  int32_t group(int64_t rank, GroupKind kind) {
    int32_t& cached = group_cache_[static_cast<size_t>(kind)];
    if (rank == rank_ && cached >= 0) return cached;
    const int32_t index = find_group(rank, kind);
    if (rank == rank_) cached = index;
    return index;
  }
  int32_t find_group(int64_t rank, GroupKind kind);

  // -- tasks --
  TaskId add(Task t) {
    const auto id = static_cast<TaskId>(s_.tasks.size());
    if (t.stream == Stream::kCompute) {
      for (TaskId blocking : blocking_) edges_.emplace_back(id, blocking);
      blocking_.clear();
      last_compute_ = id;
    }
    if (t.group >= 0) {
      const auto g = static_cast<size_t>(t.group);
      if (group_seq_.size() <= g) group_seq_.resize(g + 1, 0);
      t.instance = (static_cast<int64_t>(t.group) << 32) | group_seq_[g]++;
    }
    last_on_stream_[static_cast<size_t>(t.stream)] = id;
    s_.tasks.push_back(t);
    return id;
  }
  void dep(TaskId after, TaskId before) {
    if (after != kNoTask && before != kNoTask) edges_.emplace_back(after, before);
  }
  /// A task of this rank on `stream` covering `piece` of a chunk.
  Task task(TaskKind kind, Stream stream, const Piece& piece, int32_t chunk, int32_t model_chunk,
            int32_t micro_batch) const {
    Task t;
    t.rank = rank_;
    t.kind = kind;
    t.stream = stream;
    t.stage = static_cast<int32_t>(stage_);
    t.chunk = chunk;
    t.model_chunk = model_chunk;
    t.micro_batch = micro_batch;
    t.layer_begin = static_cast<int32_t>(piece.layer_begin);
    t.layer_end = static_cast<int32_t>(piece.layer_end);
    t.embedding = piece.embedding;
    t.head = piece.head;
    return t;
  }
  Task compute(TaskKind kind, const Slot& slot, const ChunkPlan& c, const Piece& piece,
               int32_t work_index) const {
    Task t = task(kind, Stream::kCompute, piece, slot.chunk,
                  static_cast<int32_t>(c.info.model_chunk), slot.micro_batch);
    t.work = work_index;
    return t;
  }
  Task comm(Stream stream, CommPurpose purpose, CollectiveKind kind, Dim dim, int32_t group_index,
            double bytes, const Piece& piece, int32_t chunk, int32_t model_chunk,
            int32_t micro_batch) const {
    Task t = task(TaskKind::kComm, stream, piece, chunk, model_chunk, micro_batch);
    t.purpose = purpose;
    t.collective = kind;
    t.dim = dim;
    t.group = group_index;
    t.bytes = bytes;
    return t;
  }

  // -- memory of pieces --
  static double stored(const ChunkPlan& /*chunk*/, const Piece& p) { return p.stored; }
  static double transient(const Piece& p) { return p.transient; }
  /// Bytes the zero-bubble W of a piece still needs after B (GEMM inputs).
  static double weight_inputs(const Piece& p) { return p.weight_inputs; }
  static double output_grads(const Piece& p) { return p.output_grads; }
  bool inputs_recomputed() const {
    const RecomputeMode mode = job_.plan.recompute.mode;
    return mode == RecomputeMode::kFull || mode == RecomputeMode::kEvery;
  }
  /// Gradient bytes of a piece that a per-micro-batch reduce-scatter frees.
  double per_mb_grad_bytes(const Piece& p) const {
    if (!per_mb_sync_) return 0;
    double bytes = 0;
    if (shard_ > 1) bytes += p.params.dense;
    if (edp_ > 1) bytes += p.params.expert;
    return bytes * grad_element_bytes(job_);
  }

  // -- data-parallel communication --

  /// Whether a gradient-producing piece reduces its gradients right away:
  /// every micro-batch (ZeRO-2 per micro-batch, ZeRO-3), or the last one when
  /// the reduction overlaps the backward pass; otherwise after the backward.
  bool sync_now(bool last_grad_slot) const {
    return per_mb_sync_ || (last_grad_slot && job_.options.overlap_dp);
  }

  /// Gradient reduction of a piece after `after`. `final`: the last
  /// reduction of these gradients this step (HSDP replica all-reduce then).
  void grad_sync(const Piece& p, const Slot* slot, int32_t chunk, int32_t model_chunk, bool final,
                 TaskId after);

  /// Parameter all-gathers of a piece (ZeRO). Returns the tasks and the
  /// bytes of gathered weights they allocate (ZeRO-3 only).
  std::vector<TaskId> param_gather(const Piece& p, int32_t chunk, int32_t model_chunk, int32_t mb,
                                   double* allocated);

  /// ZeRO-3 gather before compute piece number consumers_.size(): prefetch
  /// one ahead (waits for the consumer two back) with overlap_dp, else none
  /// (waits for the previous consumer).
  std::vector<TaskId> zero3_gather(const Piece& p, const Slot& slot, const ChunkPlan& c,
                                   double* allocated);

  // -- one rank --
  void build_rank(size_t ri);

  /// Activation (or gradient) bytes passed between stages per micro-batch:
  /// the SP-sharded tensor with sequence parallelism.
  double transfer_bytes() const { return transfer_bytes_; }

  /// The stage a chunk's activations go to (and its gradients come from).
  int64_t next_stage(int64_t stage, int32_t chunk) const;
  int64_t previous_stage(int64_t stage, int32_t chunk) const;
  /// The pipeline transfers after a forward / backward of (micro_batch, chunk).
  void send_forward(const ChunkPlan& c, int32_t chunk, int32_t micro_batch, Tables& tb);
  void send_backward(const ChunkPlan& c, int32_t chunk, int32_t micro_batch, Tables& tb);

  void link_pipeline();
  void link_dualpipe();
  size_t source_index(int64_t rank, int64_t stage) const {
    return static_cast<size_t>(s_.rank_index(s_.layout.on_stage(rank, stage)));
  }

  void finish_deps();

  const Job& job_;
  Schedule s_;
  int64_t p_ = 1, v_ = 1, m_ = 1;
  bool dualpipe_ = false, recompute_ = false, needs_sync_ = false, per_mb_sync_ = false;
  int zero_ = 0;
  int64_t shard_ = 1, grad_group_ = 1, edp_ = 1;
  double transfer_bytes_ = 0;
  std::vector<Stage> stages_;
  std::vector<Tables> tables_;
  std::vector<std::pair<TaskId, TaskId>> edges_;  // (after, before)
  std::map<std::pair<int, WorkRange>, int32_t> work_index_;
  std::map<std::pair<WorkRange, WorkRange>, int32_t> pair_index_;
  std::map<double, int32_t> optimizer_index_;
  std::map<std::vector<int64_t>, int32_t> group_index_;

  // Per-rank state while building.
  int64_t rank_ = 0, stage_ = 0;
  std::vector<TaskId> blocking_;   ///< the next compute task waits for these
  std::vector<TaskId> consumers_;  ///< ZeRO-3: compute tasks that used gathered weights
  std::vector<int64_t> group_seq_;
  std::array<TaskId, kStreams> last_on_stream_{};
  std::array<int32_t, kGroupKinds> group_cache_{};
  TaskId last_compute_ = kNoTask;
};

}  // namespace podsim::strategies::schedule_detail
