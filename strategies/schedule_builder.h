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
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "sim/bulk_allocator.h"
#include "strategies/job.h"
#include "strategies/memory.h"
#include "strategies/model_counts.h"
#include "strategies/schedule.h"
#include "strategies/workload.h"

namespace podsim::strategies::schedule_detail {

inline constexpr TaskId kNoTask = std::numeric_limits<TaskId>::max();

/// Thrown by Builder::add past its task limit (kMaxScheduleTasks by
/// default, schedule.h); build_schedule turns it into a problem.
struct TooManyTasks {};
inline constexpr int64_t kMegatronBucketFloor = 40'000'000;   // Megatron DDP default bucket
inline constexpr int64_t kMegatronBucketPerRank = 1'000'000;  // max(40M, 1M x dp size)

inline double d(int64_t v) { return static_cast<double>(v); }

// ---- Pieces: the layer ranges tasks cover (schedule_pieces.cc) -----------------

struct Piece {
  int64_t layer_begin = 0, layer_end = 0;
  bool embedding = false, head = false;
  int64_t mtp = 0;
  StageParams params;
  WorkRange range;  ///< the layer kinds it covers (the key of its works and lists)
  int64_t layers() const { return layer_end - layer_begin; }
};

struct ChunkPlan {
  ChunkInfo info;
  Piece whole;
  std::vector<Piece> units;    ///< ZeRO-3 units, forward order
  std::vector<Piece> buckets;  ///< gradient buckets, backward order
};

/// The pieces of chunk `c`: the whole chunk, its ZeRO-3 units and its
/// gradient buckets, with their parameters and layer kinds.
ChunkPlan plan_chunk(const Job& job, const ChunkInfo& c);

// ---- The builder (schedule_builder.cc, schedule_dp.cc) -------------------------

class Builder {
 public:
  /// `max_tasks`: add() throws TooManyTasks past it.
  /// `replica_rank`: under Scope::kRepresentatives, the rank whose pipeline
  /// replica is simulated.
  Builder(const Job& job, Scope scope, size_t max_tasks, int64_t replica_rank = 0);

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
  int32_t optimizer_work(double params, double tensors);
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
    if (s_.tasks.size() >= max_tasks_) throw TooManyTasks{};
    const auto id = static_cast<TaskId>(s_.tasks.size());
    if (t.stream == Stream::kCompute) {
      for (TaskId blocking : blocking_) edges_.emplace_back(id, blocking);
      blocking_.clear();
      last_compute_ = id;
    }
    if (t.group >= 0) {
      const auto g = static_cast<size_t>(t.group);
      if (group_seq_.size() <= g) group_seq_.resize(g + 1, 0);
      t.group_seq = group_seq_[g]++;
    }
    last_on_stream_[static_cast<size_t>(t.stream)] = id;
    s_.tasks.push_back(t);
    return id;
  }
  void dep(TaskId after, TaskId before) {
    if (after != kNoTask && before != kNoTask) edges_.emplace_back(after, before);
  }
  /// A task of this rank on `stream` covering `piece` of a chunk.
  Task task(TaskKind kind, Stream stream, const Piece& piece, int32_t chunk,
            int32_t micro_batch) const {
    Task t;
    t.rank = static_cast<int32_t>(rank_);
    t.kind = kind;
    t.stream = stream;
    t.stage = static_cast<int32_t>(stage_);
    t.chunk = chunk;
    t.micro_batch = micro_batch;
    t.layer_begin = static_cast<int32_t>(piece.layer_begin);
    t.layer_end = static_cast<int32_t>(piece.layer_end);
    t.embedding = piece.embedding;
    t.head = piece.head;
    return t;
  }
  Task compute(TaskKind kind, const Slot& slot, const Piece& piece, int32_t work_index) const {
    Task t = task(kind, Stream::kCompute, piece, slot.chunk, slot.micro_batch);
    t.work = work_index;
    return t;
  }
  Task comm(Stream stream, CommPurpose purpose, CollectiveKind kind, Dim dim, int32_t group_index,
            double bytes, const Piece& piece, int32_t chunk, int32_t micro_batch) const {
    Task t = task(TaskKind::kComm, stream, piece, chunk, micro_batch);
    t.purpose = purpose;
    t.collective = kind;
    t.dim = dim;
    t.group = group_index;
    t.bytes = bytes;
    return t;
  }

  // -- memory (schedule_memory.cc): the buffers tasks hold --
  static constexpr size_t kNoBuffer = std::numeric_limits<size_t>::max();
  /// Index of `tensors` in the schedule's tensor lists (equal lists shared).
  uint32_t tensor_list(const std::vector<double>& tensors);
  /// A buffer of `repeats` x `tensors` held from the start of `alloc`; a
  /// per-step one is given back by release(). kNoBuffer for no bytes.
  size_t hold(TaskId alloc, const std::vector<double>& tensors, int64_t repeats, MemoryKind kind,
              Lifetime lifetime = Lifetime::kStep, Stream pool = Stream::kCompute);
  size_t hold(TaskId alloc, uint32_t list, int64_t repeats, MemoryKind kind,
              Lifetime lifetime = Lifetime::kStep, Stream pool = Stream::kCompute);
  /// The tensor lists that do not depend on a layer's kind, interned once
  /// (lists_; per kind: kind_lists()).
  void intern_lists();
  /// A list that depends on a piece's range only (its layer kinds,
  /// embedding, head and MTP modules), made once per range.
  enum class PieceList : uint8_t {
    kRecomputed,
    kDenseGrads,
    kExpertGrads,
    kDenseGathered,
    kExpertGathered,
    kAutogradGrads,
    kWeights,
    kStepGrads,
    kAccumulatedGrads,
    kExpertShards,
  };
  template <typename Make>
  uint32_t piece_list(PieceList what, const Piece& p, Make make) {
    auto key = std::make_pair(static_cast<int>(what), p.range);
    auto it = piece_lists_.find(key);
    if (it != piece_lists_.end()) return it->second;
    const uint32_t list = tensor_list(make());
    piece_lists_.emplace(key, list);
    return list;
  }
  void release(size_t buffer, TaskId free) {
    if (buffer != kNoBuffer) s_.buffers[buffer].free = free;
  }
  void release(const std::vector<size_t>& buffers, TaskId free) {
    for (size_t b : buffers) release(b, free);
  }
  /// What each layer of forward piece `p` of slot `key` keeps (and its
  /// embedding / head), held from the forward's start.
  void keep_activations(TaskId forward, const ChunkPlan& c, const Piece& p, size_t key);
  /// Which of the kept buffers of a piece a backward task gives back.
  enum class Kept : uint8_t { kAll, kAllButWeightInputs, kWeightInputsAndOutputGrads };
  void release_kept(TaskId free, const ChunkPlan& c, const Piece& p, size_t key, Kept part);
  /// Zero-bubble B: the output gradients (and, when the forward kept only
  /// checkpoints, the recomputed GEMM inputs) of each layer of `p`, held
  /// until W releases them with Kept::kWeightInputsAndOutputGrads.
  void hold_for_weight_pass(TaskId b, const ChunkPlan& c, const Piece& p, size_t key);
  /// The unreduced gradients of piece `p` a per-micro-batch reduce-scatter
  /// gives back: {dense, expert} buffers (kNoBuffer where none).
  std::array<size_t, 2> hold_micro_batch_grads(TaskId producer, const Piece& p);
  /// The rank's weights, gradients and optimizer states.
  void hold_standing(TaskId first, TaskId optimizer, const Stage& st);
  /// After forward piece `p` of slot `key` is added: what it keeps, the loss's
  /// working memory, and (FSDP without ZeRO-3) the 16-bit weights it gathers
  /// for the rest of the step when it is the chunk's first forward.
  void on_forward(TaskId f, const ChunkPlan& c, const Piece& p, size_t key, bool first_of_chunk);
  /// After the last forward piece of a slot: the stage output it keeps.
  void on_chunk_forward_end(TaskId last, const ChunkPlan& c, size_t key);
  /// After backward piece `p` of slot `key` is added: its working memory,
  /// the loss's, and its weight gradients (`weight_grads`: not zero-bubble B).
  void on_backward(TaskId b, const ChunkPlan& c, const Piece& p, bool weight_grads);
  /// After the last backward piece of a slot.
  void on_chunk_backward_end(TaskId last, size_t key);
  /// What the weight-gradient pass `task` of piece `p` holds: the 16-bit
  /// gradients autograd writes before the framework takes them
  /// (WeightGrads::kAutogradThenCopy), and the chunk's step gradients from
  /// its first weight-gradient pass (GradBuffers::kPerStep).
  void on_weight_grads(TaskId task, const ChunkPlan& c, const Piece& p);
  /// A reduce-scatter `rs` of piece `p`'s dense or expert gradients that
  /// gives back `reduced`: when that buffer exists and, with per-step
  /// gradient buffers, the shard it leaves.
  void on_reduce_scatter(TaskId rs, const Piece& p, int32_t chunk, bool expert, size_t reduced);
  /// Once the optimizer task exists: standing state, and what lives until
  /// the step ends.
  void finish_rank_memory(TaskId first, TaskId optimizer, const Stage& st);
  bool inputs_recomputed() const {
    const RecomputeMode mode = job_.plan.recompute.mode;
    return mode == RecomputeMode::kFull || mode == RecomputeMode::kEvery;
  }

  // -- data-parallel communication --

  /// Whether a gradient-producing piece reduces its gradients right away:
  /// every micro-batch (ZeRO-2 per micro-batch, ZeRO-3), or the last one when
  /// the reduction overlaps the backward pass; otherwise after the backward.
  bool sync_now(bool last_grad_slot) const {
    return per_mb_sync_ || (last_grad_slot && overlap_grad_reduce_ && !sync_after_chunk_);
  }
  /// The reductions of chunk `c`'s gradients, bucket by bucket, after its
  /// last backward `after` (sync_after_chunk_); the compute stream waits for
  /// them. Returns the last one.
  TaskId sync_chunk_after(const ChunkPlan& c, const Slot& slot, TaskId after);

  /// Gradient reduction of a piece after `after`. `final`: the last
  /// reduction of these gradients this step (HSDP replica all-reduce then).
  /// `grads`: the {dense, expert} per-micro-batch gradient buffers its
  /// reduce-scatters give back.
  void grad_sync(const Piece& p, const Slot* slot, int32_t chunk, bool final, TaskId after,
                 std::array<size_t, 2> grads = {kNoBuffer, kNoBuffer});

  /// The NCCL calls one dense gather or reduce-scatter of piece `p` over
  /// the shard group is made of: one per partitioned tensor where the
  /// software collects parameter by parameter (ParamGather::kParameter under
  /// ZeRO-3), else 1.
  uint8_t shard_calls(const Piece& p) const;

  /// Parameter all-gathers of a piece (ZeRO). Returns the tasks; with ZeRO-3
  /// adds the buffers of gathered weights they hold to `gathered` (their
  /// consumer gives them back).
  std::vector<TaskId> param_gather(const Piece& p, int32_t chunk, int32_t mb,
                                   std::vector<size_t>* gathered);

  /// ZeRO-3 gather before compute piece number consumers_.size() +
  /// `consumers_ahead`: prefetched one ahead (waits for the consumer two
  /// back) when overlap_dp and the framework prefetches in this pass
  /// (`prefetch`), else issued when the previous consumer is done (exposed).
  /// A gather made one piece early (`consumers_ahead` 1) must prefetch.
  std::vector<TaskId> zero3_gather(const Piece& p, const Slot& slot, bool prefetch,
                                   std::vector<size_t>* gathered, size_t consumers_ahead = 0);

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
  /// The chunk's input gradient to the previous stage, after `after` (the
  /// chunk's backward when kNoTask).
  void send_backward(const ChunkPlan& c, int32_t chunk, int32_t micro_batch, Tables& tb,
                     TaskId after = kNoTask);
  /// A pipeline send to `stage` of chunk `chunk`, micro-batch `micro_batch`,
  /// after `after` (blocking unless overlap_pp); returns the send task.
  TaskId send_to_stage(Stream stream, CommPurpose purpose, int64_t stage, TaskId after,
                       const ChunkPlan& c, int32_t chunk, int32_t micro_batch);

  /// Every-rank scope: reserves the tasks and edges the build will make.
  /// Fills Schedule::buffer_ranks.
  void choose_buffer_ranks();
  void reserve_every_rank();
  void link_pipeline();
  void link_dualpipe();
  size_t source_index(int64_t rank, int64_t stage) const {
    return static_cast<size_t>(s_.rank_index(s_.layout.on_stage(rank, stage)));
  }

  void finish_deps();

  const Job& job_;
  size_t max_tasks_;
  Schedule s_;
  int64_t p_ = 1, v_ = 1, m_ = 1;
  bool dualpipe_ = false, recompute_ = false, needs_sync_ = false, per_mb_sync_ = false;
  /// Gradients are reduced while the last backward runs: the scenario allows
  /// it (options.overlap.dp) and the framework does it (data_parallel
  /// .grad_reduce overlapped); otherwise one blocking reduction after it.
  bool overlap_grad_reduce_ = false;
  /// Under PP, a chunk's reductions start after its last backward and the
  /// compute stream waits for them (PipelineGradSync::kAfterLastBackward).
  bool sync_after_chunk_ = false;
  int zero_ = 0;
  int64_t shard_ = 1, grad_group_ = 1, edp_ = 1;
  /// The tensor lists of one layer kind (kind_lists()).
  struct KindLists {
    uint32_t kept = 0,
             kept_between_checkpoints = 0;  ///< what a layer keeps (every C: off-checkpoint)
    uint32_t rest = 0, weight_inputs = 0;   ///< zero-bubble: kept apart for W
    uint32_t output_grads = 0;
  };
  std::map<LayerKind, KindLists> kind_lists_;
  const KindLists& kind_lists(const LayerKind& kind);
  LayerTensorsByKind layer_tensors_{job_};
  struct Lists {
    uint32_t embedding = 0, head = 0, mtp = 0;
    uint32_t loss_forward = 0, loss_backward = 0;  ///< the loss's working memory
    uint32_t backward_working = 0;                 ///< one layer's backward
    uint32_t stage_output = 0, logits = 0;         ///< what a stage sends on / the model returns
    /// B and W are apart (zero-bubble, DualPipe) and the forward keeps the
    /// GEMM inputs W reads.
    bool split_weight_inputs = false;
  } lists_;
  double transfer_bytes_ = 0;
  std::vector<Stage> stages_;
  std::vector<Tables> tables_;
  sim::BulkVector<std::pair<TaskId, TaskId>> edges_;  // (after, before)
  std::map<std::pair<int, WorkRange>, int32_t> work_index_;
  std::map<std::pair<WorkRange, WorkRange>, int32_t> pair_index_;
  std::map<std::pair<double, double>, int32_t> optimizer_index_;  ///< (params, tensors)
  std::map<std::vector<int64_t>, int32_t> group_index_;
  std::map<std::vector<double>, uint32_t> tensor_list_index_;
  std::map<std::pair<int, WorkRange>, uint32_t> piece_lists_;

  // Per-rank state while building.
  int64_t rank_ = 0, stage_ = 0;
  std::vector<TaskId> blocking_;   ///< the next compute task waits for these
  std::vector<TaskId> consumers_;  ///< ZeRO-3: compute tasks that used gathered weights
  /// Kept activation buffers of the rank, per slot key (mb * v + chunk): per
  /// layer of the chunk, then the embedding, the head and the MTP modules.
  struct KeptLayer {
    size_t rest = kNoBuffer;           ///< all it keeps but what follows
    size_t weight_inputs = kNoBuffer;  ///< zero-bubble: the GEMM inputs W reads
    size_t output_grads = kNoBuffer;   ///< zero-bubble: held from B to W
  };
  std::vector<std::vector<KeptLayer>> kept_;
  std::vector<size_t> stage_outputs_;   ///< per slot key: its output kept until its backward
  std::vector<size_t> until_step_end_;  ///< buffers the optimizer task's end gives back
  /// Per chunk: gradients held across micro-batches of one step
  /// (GradBuffers::kPerStep), from its first backward: unsharded
  /// accumulators until the last reduction, or the shard of a per-micro-batch
  /// reduce-scatter until the next step.
  std::vector<size_t> chunk_grads_;
  std::vector<bool> chunk_grads_held_;
  std::vector<TaskId> last_grad_sync_;  ///< per chunk
  /// Pieces (chunk, first layer, embedding, head, expert) whose shard the
  /// step's reduce-scatters already made.
  std::set<std::tuple<int32_t, int64_t, bool, bool, bool>> reduced_shards_;
  std::vector<uint32_t> group_seq_;
  std::array<TaskId, kStreams> last_on_stream_{};
  std::array<int32_t, kGroupKinds> group_cache_{};
  TaskId last_compute_ = kNoTask;
};

}  // namespace podsim::strategies::schedule_detail
