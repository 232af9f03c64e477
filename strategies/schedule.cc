#include "strategies/schedule.h"

#include <algorithm>
#include <array>
#include <deque>
#include <limits>
#include <map>
#include <tuple>

#include "strategies/memory.h"
#include "strategies/model_counts.h"

namespace podsim::strategies {
namespace {

constexpr TaskId kNoTask = std::numeric_limits<TaskId>::max();
constexpr int64_t kMegatronBucketFloor = 40'000'000;   // Megatron DDP default bucket
constexpr int64_t kMegatronBucketPerRank = 1'000'000;  // max(40M, 1M x dp size)

double d(int64_t v) { return static_cast<double>(v); }

// ---- Pipeline orders ---------------------------------------------------------

/// Megatron's interleaved (and, with v = 1, plain) 1F1B order of one stage.
std::vector<Slot> one_f_one_b(int64_t p, int64_t v, int64_t m, int64_t s, SlotKind backward) {
  const int64_t total = m * v;
  const int64_t warmup = std::min(total, v == 1 ? p - s - 1 : (p - s - 1) * 2 + (v - 1) * p);
  auto mb = [&](int64_t k) { return static_cast<int32_t>((k / (p * v)) * p + k % p); };
  auto fwd = [&](int64_t k) {
    return Slot{SlotKind::kForward, mb(k), static_cast<int32_t>((k / p) % v)};
  };
  auto bwd = [&](int64_t k) {
    return Slot{backward, mb(k), static_cast<int32_t>(v - 1 - (k / p) % v)};
  };
  std::vector<Slot> out;
  out.reserve(static_cast<size_t>(2 * total));
  for (int64_t k = 0; k < warmup; ++k) out.push_back(fwd(k));
  for (int64_t i = 0; i < total - warmup; ++i) {
    out.push_back(fwd(warmup + i));
    out.push_back(bwd(i));
  }
  for (int64_t k = total - warmup; k < total; ++k) out.push_back(bwd(k));
  return out;
}

std::vector<std::vector<Slot>> zero_bubble_h1(int64_t p, int64_t m) {
  constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
  std::vector<std::vector<Slot>> fb(static_cast<size_t>(p));
  for (int64_t s = 0; s < p; ++s)
    fb[static_cast<size_t>(s)] = one_f_one_b(p, 1, m, s, SlotKind::kBackward);
  std::vector<std::vector<int64_t>> f_end(static_cast<size_t>(p),
                                          std::vector<int64_t>(static_cast<size_t>(m), kNever));
  std::vector<std::vector<int64_t>> b_end = f_end;
  std::vector<size_t> pos(static_cast<size_t>(p), 0);
  std::vector<int64_t> busy(static_cast<size_t>(p), 0), f_done(static_cast<size_t>(p), 0),
      w_done(static_cast<size_t>(p), 0);
  std::vector<std::deque<int32_t>> pending_w(static_cast<size_t>(p));
  std::vector<std::vector<Slot>> out(static_cast<size_t>(p));
  const auto total = static_cast<size_t>(3 * m);
  for (int64_t t = 0;; ++t) {
    bool all_done = true;
    for (int64_t s = 0; s < p; ++s) {
      const auto si = static_cast<size_t>(s);
      if (out[si].size() < total) all_done = false;
      if (busy[si] > t || out[si].size() == total) continue;
      const std::vector<Slot>& seq = fb[si];
      bool ready = false;
      bool is_forward = false;
      if (pos[si] < seq.size()) {
        const Slot& next = seq[pos[si]];
        const auto mbi = static_cast<size_t>(next.micro_batch);
        is_forward = next.kind == SlotKind::kForward;
        if (is_forward) {
          ready = s == 0 || f_end[si - 1][mbi] <= t;
        } else {
          ready = s == p - 1 ? f_end[si][mbi] <= t : b_end[si + 1][mbi] <= t;
        }
      }
      const bool over_cap = is_forward && f_done[si] - w_done[si] >= p;
      if (ready && !(over_cap && !pending_w[si].empty())) {
        Slot next = seq[pos[si]++];
        const auto mbi = static_cast<size_t>(next.micro_batch);
        if (next.kind == SlotKind::kForward) {
          f_end[si][mbi] = t + 1;
          ++f_done[si];
        } else {
          b_end[si][mbi] = t + 1;
          pending_w[si].push_back(next.micro_batch);
        }
        out[si].push_back(next);
        busy[si] = t + 1;
      } else if (!pending_w[si].empty()) {
        out[si].push_back({SlotKind::kBackwardWeight, pending_w[si].front(), 0});
        pending_w[si].pop_front();
        ++w_done[si];
        busy[si] = t + 1;
      }
    }
    if (all_done) break;
  }
  return out;
}

// ---- Pieces: the layer ranges tasks cover --------------------------------------

struct Piece {
  int64_t layer_begin = 0, layer_end = 0;
  bool embedding = false, head = false;
  StageParams params;
  double stored = 0;     ///< activation bytes kept per micro-batch
  double transient = 0;  ///< bytes a recompute of the piece brings back
  int64_t layers() const { return layer_end - layer_begin; }
};

struct ChunkPlan {
  ChunkInfo info;
  Piece whole;
  std::vector<Piece> units;    ///< ZeRO-3 units, forward order
  std::vector<Piece> buckets;  ///< gradient buckets, backward order
};

void add_params(StageParams& to, const StageParams& from, double times = 1.0) {
  to.dense += times * from.dense;
  to.expert += times * from.expert;
}

Piece piece_of(const Job& job, int64_t begin, int64_t end, bool embedding, bool head) {
  Piece p{begin, end, embedding, head, {}, 0, 0};
  add_params(p.params, layer_parameters(job), d(end - begin));
  if (embedding) add_params(p.params, embedding_parameters(job));
  if (head) add_params(p.params, head_parameters(job));
  return p;
}

/// Fills the memory fields of a piece of chunk `c` (computed once per piece:
/// tasks reuse them).
void set_memory(const Job& job, const ChunkInfo& c, Piece& p) {
  p.stored = stored_activation_bytes(job, c, p.layer_begin, p.layer_end, p.embedding, p.head);
  p.transient = job.plan.recompute.mode == RecomputeMode::kNone
                    ? 0.0
                    : recompute_transient_bytes(job, p.layers());
}

ChunkPlan plan_chunk(const Job& job, const ChunkInfo& c) {
  ChunkPlan cp;
  cp.info = c;
  cp.whole = piece_of(job, c.layer_begin, c.layer_end, c.has_embedding, c.has_head);
  const int64_t unit = job.options.fsdp_unit_layers;
  for (int64_t l = c.layer_begin; l < c.layer_end; l += unit) {
    const int64_t end = std::min(l + unit, c.layer_end);
    cp.units.push_back(piece_of(job, l, end, c.has_embedding && l == c.layer_begin,
                                c.has_head && end == c.layer_end));
  }
  // Buckets in backward order: head, last layer ... first layer, embedding;
  // a bucket closes once it holds the bucket size (Megatron fills buckets in
  // the reverse order of the parameters, so they are ready in backward order).
  const int64_t threshold =
      job.options.dp_bucket_params > 0
          ? job.options.dp_bucket_params
          : std::max(kMegatronBucketFloor, kMegatronBucketPerRank * grad_group_size(job));
  Piece open{c.layer_end, c.layer_end, false, false, {}, 0, 0};
  auto close = [&]() {
    if (open.layers() > 0 || open.embedding || open.head) cp.buckets.push_back(open);
    open = Piece{open.layer_begin, open.layer_begin, false, false, {}, 0, 0};
  };
  auto full = [&]() { return open.params.total() >= d(threshold); };
  if (c.has_head) {
    open.head = true;
    add_params(open.params, head_parameters(job));
    if (full()) close();
  }
  for (int64_t l = c.layer_end - 1; l >= c.layer_begin; --l) {
    open.layer_begin = l;
    add_params(open.params, layer_parameters(job));
    if (full()) close();
  }
  if (c.has_embedding) {
    open.embedding = true;
    add_params(open.params, embedding_parameters(job));
  }
  close();
  set_memory(job, c, cp.whole);
  for (Piece& p : cp.units) set_memory(job, c, p);
  for (Piece& p : cp.buckets) set_memory(job, c, p);
  return cp;
}

// ---- The builder ----------------------------------------------------------------

class Builder {
 public:
  Builder(const Job& job, Scope scope) : job_(job) {
    s_.job = job;
    s_.scope = scope;
    s_.layout = Layout(job.plan);
    s_.micro_batches = micro_batches(job);
    p_ = job.plan.pp;
    v_ = job.plan.virtual_stages;
    m_ = s_.micro_batches;
    zb_ = job.plan.schedule == PipelineSchedule::kZeroBubble;
    zero_ = job.plan.zero;
    recompute_ = job.plan.recompute.mode != RecomputeMode::kNone;
    shard_ = shard_group_size(job);
    grad_group_ = grad_group_size(job);
    edp_ = expert_dp_size(job);
    needs_sync_ = grad_group_ > 1 || (job.model.moe.has_value() && edp_ > 1);
    per_mb_sync_ = zero_ == 3 || (zero_ == 2 && zero2_reduces_every_micro_batch(job));
    acts_ = layer_activations(job);
    const RankShape r = rank_shape(job);
    transfer_bytes_ = d(r.norm_tokens) * d(r.hidden) * r.e;
    if (scope == Scope::kEveryRank) {
      for (int64_t rank = 0; rank < s_.layout.world(); ++rank) s_.ranks.push_back(rank);
    } else {
      for (int64_t st = 0; st < p_; ++st) s_.ranks.push_back(s_.layout.representative(st));
      std::sort(s_.ranks.begin(), s_.ranks.end());
    }
    const std::vector<std::vector<Slot>> orders = pipeline_orders(job);
    stages_.resize(static_cast<size_t>(p_));
    for (int64_t st = 0; st < p_; ++st) {
      Stage& stage = stages_[static_cast<size_t>(st)];
      for (const ChunkInfo& c : stage_chunks(job, st)) stage.chunks.push_back(plan_chunk(job, c));
      stage.order = orders[static_cast<size_t>(st)];
      stage.last_grad_slot.assign(static_cast<size_t>(v_), -1);
      const SlotKind grad_kind = zb_ ? SlotKind::kBackwardWeight : SlotKind::kBackward;
      for (size_t i = 0; i < stage.order.size(); ++i) {
        if (stage.order[i].kind == grad_kind) {
          stage.last_grad_slot[static_cast<size_t>(stage.order[i].chunk)] = static_cast<int64_t>(i);
        }
      }
    }
  }

  Schedule build() {
    tables_.resize(s_.ranks.size());
    // Ranks of one stage have equal task counts, so the largest count seen
    // so far times the ranks left bounds what is still to come: reserve that
    // (a doubling vector would hold up to twice the tasks of a 1,000-rank job).
    size_t most_tasks = 0, most_edges = 0;
    for (size_t ri = 0; ri < s_.ranks.size(); ++ri) {
      const size_t tasks_before = s_.tasks.size(), edges_before = edges_.size();
      s_.rank_begin.push_back(static_cast<uint32_t>(tasks_before));
      build_rank(ri);
      most_tasks = std::max(most_tasks, s_.tasks.size() - tasks_before);
      most_edges = std::max(most_edges, edges_.size() - edges_before);
      const size_t left = s_.ranks.size() - ri - 1;
      if (s_.tasks.capacity() < s_.tasks.size() + most_tasks * left) {
        s_.tasks.reserve(s_.tasks.size() + most_tasks * left);
      }
      if (edges_.capacity() < edges_.size() + most_edges * left) {
        edges_.reserve(edges_.size() + most_edges * left);
      }
    }
    s_.rank_begin.push_back(static_cast<uint32_t>(s_.tasks.size()));
    link_pipeline();
    finish_deps();
    return std::move(s_);
  }

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
  int32_t work(Pass pass, const Piece& piece) {
    const auto key =
        std::make_tuple(static_cast<int>(pass), piece.layers(), piece.embedding, piece.head);
    auto it = work_index_.find(key);
    if (it != work_index_.end()) return it->second;
    const auto index = static_cast<int32_t>(s_.works.size());
    s_.works.push_back(make_work(job_, pass, piece.layers(), piece.embedding, piece.head));
    work_index_.emplace(key, index);
    return index;
  }
  int32_t optimizer_work(double params) {
    auto it = optimizer_index_.find(params);
    if (it != optimizer_index_.end()) return it->second;
    const auto index = static_cast<int32_t>(s_.works.size());
    Work w;
    w.name = "optimizer";
    w.segments.push_back({"optimizer", 1, optimizer_ops(job_, params)});
    s_.works.push_back(std::move(w));
    optimizer_index_.emplace(params, index);
    return index;
  }
  int32_t group(int64_t rank, GroupKind kind) {
    int32_t& cached = group_cache_[static_cast<size_t>(kind)];
    if (rank == rank_ && cached >= 0) return cached;
    const int32_t index = find_group(rank, kind);
    if (rank == rank_) cached = index;
    return index;
  }
  int32_t find_group(int64_t rank, GroupKind kind) {
    std::vector<int64_t> members = s_.layout.group(rank, kind);
    auto it = group_index_.find(members);
    if (it != group_index_.end()) return it->second;
    const auto index = static_cast<int32_t>(s_.groups.size());
    group_index_.emplace(members, index);
    s_.groups.push_back({kind, std::move(members)});
    return index;
  }

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
  double weight_inputs(const Piece& p) const { return d(p.layers()) * acts_.weight_inputs; }
  double output_grads(const Piece& p) const { return d(p.layers()) * acts_.output_grads; }
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
                 TaskId after) {
    if (!needs_sync_) return;
    const double g = grad_element_bytes(job_);
    const int32_t mb = slot != nullptr ? slot->micro_batch : -1;
    TaskId last = kNoTask;
    auto emit = [&](CommPurpose purpose, CollectiveKind kind, GroupKind gk, double bytes,
                    double free_bytes) {
      Task t = comm(Stream::kDpReduce, purpose, kind, Dim::kDp, group(rank_, gk), bytes, p, chunk,
                    model_chunk, mb);
      t.free_bytes = free_bytes;
      last = add(t);
      dep(last, after);
    };
    if (p.params.dense > 0 && grad_group_ > 1) {
      const double bytes = p.params.dense * g;
      if (zero_ == 0) {
        emit(CommPurpose::kGradSync, CollectiveKind::kAllReduce, GroupKind::kDpCp, bytes, 0);
      } else {
        if (shard_ > 1) {
          emit(CommPurpose::kGradSync, CollectiveKind::kReduceScatter, GroupKind::kShard, bytes,
               per_mb_sync_ ? bytes : 0.0);
        }
        if (final && grad_group_ / shard_ > 1) {
          emit(CommPurpose::kGradReplicaSync, CollectiveKind::kAllReduce, GroupKind::kReplica,
               bytes / d(shard_), 0);
        }
      }
    }
    if (p.params.expert > 0 && edp_ > 1) {
      const double bytes = p.params.expert * g;
      emit(CommPurpose::kGradSync,
           zero_ == 0 ? CollectiveKind::kAllReduce : CollectiveKind::kReduceScatter,
           GroupKind::kExpertDp, bytes, per_mb_sync_ ? bytes : 0.0);
    }
    if (!job_.options.overlap_dp && last != kNoTask) blocking_.push_back(last);
  }

  /// Parameter all-gathers of a piece (ZeRO). Returns the tasks and the
  /// bytes of gathered weights they allocate (ZeRO-3 only).
  std::vector<TaskId> param_gather(const Piece& p, int32_t chunk, int32_t model_chunk, int32_t mb,
                                   double* allocated) {
    std::vector<TaskId> out;
    const double e = weight_element_bytes(job_);
    *allocated = 0;
    auto emit = [&](GroupKind gk, double params, int64_t size) {
      if (params <= 0 || size <= 1) return;
      Task t = comm(Stream::kDpGather, CommPurpose::kParamGather, CollectiveKind::kAllGather,
                    Dim::kDp, group(rank_, gk), params * e, p, chunk, model_chunk, mb);
      if (zero_ == 3) {
        t.alloc_bytes = params * e * (1.0 - 1.0 / d(size));
        *allocated += t.alloc_bytes;
      }
      out.push_back(add(t));
    };
    emit(GroupKind::kShard, p.params.dense, shard_);
    emit(GroupKind::kExpertDp, p.params.expert, edp_);
    return out;
  }

  /// ZeRO-3 gather before compute piece number consumers_.size(): prefetch
  /// one ahead (waits for the consumer two back) with overlap_dp, else none
  /// (waits for the previous consumer).
  std::vector<TaskId> zero3_gather(const Piece& p, const Slot& slot, const ChunkPlan& c,
                                   double* allocated) {
    std::vector<TaskId> gathers = param_gather(
        p, slot.chunk, static_cast<int32_t>(c.info.model_chunk), slot.micro_batch, allocated);
    const size_t back = job_.options.overlap_dp ? 2 : 1;
    if (consumers_.size() >= back) {
      for (TaskId g : gathers) dep(g, consumers_[consumers_.size() - back]);
    }
    return gathers;
  }

  // -- one rank --
  void build_rank(size_t ri) {
    rank_ = s_.ranks[ri];
    stage_ = s_.layout.stage(rank_);
    const Stage& st = stages_[static_cast<size_t>(stage_)];
    Tables& tb = tables_[ri];
    const auto slots = static_cast<size_t>(m_ * v_);
    for (auto* v :
         {&tb.f_first, &tb.f_last, &tb.send_next, &tb.b_first, &tb.b_last, &tb.send_prev}) {
      v->assign(slots, kNoTask);
    }
    blocking_.clear();
    consumers_.clear();
    group_seq_.clear();
    last_on_stream_.fill(kNoTask);
    group_cache_.fill(-1);
    last_compute_ = kNoTask;
    const int64_t chunks_total = p_ * v_;
    const bool zero12 = zero_ == 1 || zero_ == 2;

    // ZeRO-1/2 with overlap: the parameter all-gathers of the previous
    // step's update run at the start of this step, bucket by bucket, and the
    // first forward of each chunk runs in bucket pieces, each waiting for its
    // own bucket (Megatron's overlapped param gather).
    std::vector<std::vector<std::vector<TaskId>>> chunk_gathers(static_cast<size_t>(v_));
    if (zero12 && job_.options.overlap_dp) {
      for (const ChunkPlan& c : st.chunks) {
        auto& per_bucket = chunk_gathers[static_cast<size_t>(c.info.virtual_index)];
        for (auto it = c.buckets.rbegin(); it != c.buckets.rend(); ++it) {
          double unused = 0;
          per_bucket.push_back(param_gather(*it, static_cast<int32_t>(c.info.virtual_index),
                                            static_cast<int32_t>(c.info.model_chunk), -1, &unused));
        }
      }
    }
    std::vector<bool> chunk_started(static_cast<size_t>(v_), false);

    for (size_t si = 0; si < st.order.size(); ++si) {
      const Slot& slot = st.order[si];
      const ChunkPlan& c = st.chunks[static_cast<size_t>(slot.chunk)];
      const auto key = static_cast<size_t>(slot.micro_batch * v_ + slot.chunk);
      const auto mc = static_cast<int32_t>(c.info.model_chunk);
      const bool last_grad =
          static_cast<int64_t>(si) == st.last_grad_slot[static_cast<size_t>(slot.chunk)];
      // Pieces of a gradient-producing slot: buckets when their reduction
      // overlaps this slot, ZeRO-3 units, or the whole chunk.
      auto grad_pieces = [&]() -> const std::vector<Piece>* {
        if (zero_ == 3) return nullptr;  // units, reversed
        if (!needs_sync_) return nullptr;
        if (per_mb_sync_) return &c.buckets;
        if (last_grad && job_.options.overlap_dp) return &c.buckets;
        return nullptr;
      };
      auto reversed_units = [&]() { return std::vector<Piece>(c.units.rbegin(), c.units.rend()); };

      if (slot.kind == SlotKind::kForward) {
        const auto chunk_index = static_cast<size_t>(slot.chunk);
        const std::vector<std::vector<TaskId>>& bucket_gathers = chunk_gathers[chunk_index];
        const bool first_of_chunk = !chunk_started[chunk_index];
        chunk_started[chunk_index] = true;
        const bool by_bucket = first_of_chunk && !bucket_gathers.empty();
        const std::vector<Piece> pieces =
            zero_ == 3  ? c.units
            : by_bucket ? std::vector<Piece>(c.buckets.rbegin(), c.buckets.rend())
                        : std::vector<Piece>{c.whole};
        for (size_t i = 0; i < pieces.size(); ++i) {
          const Piece& p = pieces[i];
          double gathered = 0;
          std::vector<TaskId> gathers;
          if (zero_ == 3) gathers = zero3_gather(p, slot, c, &gathered);
          if (by_bucket) gathers = bucket_gathers[i];
          Task t = compute(TaskKind::kForward, slot, c, p, work(Pass::kForward, p));
          t.alloc_bytes = stored(c, p);
          t.free_bytes = gathered;
          const TaskId f = add(t);
          for (TaskId g : gathers) dep(f, g);
          if (zero_ == 3) consumers_.push_back(f);
          if (i == 0) tb.f_first[key] = f;
          tb.f_last[key] = f;
        }
        if (c.info.model_chunk < chunks_total - 1) {
          Task t = comm(Stream::kPpSendNext, CommPurpose::kActivation, CollectiveKind::kSendRecv,
                        Dim::kPp, -1, transfer_bytes(), c.whole, slot.chunk, mc, slot.micro_batch);
          t.peer = s_.layout.on_stage(rank_, (stage_ + 1) % p_);
          const TaskId send = add(t);
          dep(send, tb.f_last[key]);
          tb.send_next[key] = send;
          if (!job_.options.overlap_pp) blocking_.push_back(send);
        }
        continue;
      }

      if (slot.kind == SlotKind::kBackward) {
        const bool grad_slot = !zb_;
        const std::vector<Piece>* bucket_pieces = grad_slot ? grad_pieces() : nullptr;
        const std::vector<Piece> pieces = zero_ == 3      ? reversed_units()
                                          : bucket_pieces ? *bucket_pieces
                                                          : std::vector<Piece>{c.whole};
        TaskId b = kNoTask;
        for (size_t i = 0; i < pieces.size(); ++i) {
          const Piece& p = pieces[i];
          double gathered = 0;
          std::vector<TaskId> gathers;
          if (zero_ == 3) gathers = zero3_gather(p, slot, c, &gathered);
          TaskId first = kNoTask;
          if (recompute_) {
            Task r = compute(TaskKind::kRecompute, slot, c, p, work(Pass::kRecompute, p));
            r.alloc_bytes = transient(p);
            first = add(r);
            for (TaskId g : gathers) dep(first, g);
          }
          Task bt = compute(zb_ ? TaskKind::kBackwardInput : TaskKind::kBackward, slot, c, p,
                            work(zb_ ? Pass::kBackwardInput : Pass::kBackward, p));
          const double released = stored(c, p) + transient(p);
          if (!zb_) {
            bt.alloc_bytes = per_mb_grad_bytes(p);
            bt.free_bytes = released;
          } else if (inputs_recomputed()) {
            bt.alloc_bytes = weight_inputs(p) + output_grads(p);
            bt.free_bytes = released;
          } else {
            bt.alloc_bytes = output_grads(p);
            bt.free_bytes = std::max(0.0, released - weight_inputs(p));
          }
          bt.free_bytes += gathered;
          b = add(bt);
          if (first == kNoTask) {
            first = b;
            for (TaskId g : gathers) dep(b, g);
          }
          if (zero_ == 3) consumers_.push_back(b);
          if (i == 0) {
            tb.b_first[key] = first;
            dep(first, tb.f_last[key]);  // every forward precedes its backward
          }
          if (grad_slot && sync_now(last_grad)) grad_sync(p, &slot, slot.chunk, mc, last_grad, b);
        }
        tb.b_last[key] = b;
        if (c.info.model_chunk > 0) {
          Task t = comm(Stream::kPpSendPrev, CommPurpose::kGradient, CollectiveKind::kSendRecv,
                        Dim::kPp, -1, transfer_bytes(), c.whole, slot.chunk, mc, slot.micro_batch);
          t.peer = s_.layout.on_stage(rank_, (stage_ - 1 + p_) % p_);
          const TaskId send = add(t);
          dep(send, b);
          tb.send_prev[key] = send;
          if (!job_.options.overlap_pp) blocking_.push_back(send);
        }
        continue;
      }

      // Zero-bubble W: weight gradients, no weights needed (no gather).
      const std::vector<Piece>* bucket_pieces = grad_pieces();
      const std::vector<Piece> pieces = zero_ == 3      ? reversed_units()
                                        : bucket_pieces ? *bucket_pieces
                                                        : std::vector<Piece>{c.whole};
      for (const Piece& p : pieces) {
        Task wt = compute(TaskKind::kBackwardWeight, slot, c, p, work(Pass::kBackwardWeight, p));
        wt.alloc_bytes = per_mb_grad_bytes(p);
        wt.free_bytes = weight_inputs(p) + output_grads(p);
        const TaskId w = add(wt);
        dep(w, tb.b_last[key]);
        if (sync_now(last_grad)) grad_sync(p, &slot, slot.chunk, mc, last_grad, w);
      }
    }

    // Reductions not overlapped with the backward pass run after it.
    if (needs_sync_ && !per_mb_sync_ && !job_.options.overlap_dp) {
      for (auto it = st.chunks.rbegin(); it != st.chunks.rend(); ++it) {
        for (const Piece& p : it->buckets) {
          grad_sync(p, nullptr, static_cast<int32_t>(it->info.virtual_index),
                    static_cast<int32_t>(it->info.model_chunk), true, last_compute_);
        }
      }
    }
    if (job_.model.tied_embeddings && p_ > 1 && (stage_ == 0 || stage_ == p_ - 1)) {
      const double bytes =
          d(rank_shape(job_).vocab) * d(job_.model.hidden) * grad_element_bytes(job_);
      Task t = comm(Stream::kDpReduce, CommPurpose::kEmbeddingSync, CollectiveKind::kAllReduce,
                    Dim::kPp, group(rank_, GroupKind::kEmbedding), bytes, Piece{}, -1, -1, -1);
      t.embedding = stage_ == 0;
      t.head = stage_ == p_ - 1;
      dep(add(t), last_compute_);
    }
    const TaskId reduce_tail = last_on_stream_[static_cast<size_t>(Stream::kDpReduce)];
    Task o = compute(TaskKind::kOptimizer, Slot{}, st.chunks.front(), Piece{},
                     optimizer_work(optimizer_parameters(job_, stage_)));
    o.chunk = o.model_chunk = o.micro_batch = -1;
    blocking_.clear();
    const TaskId opt = add(o);
    dep(opt, reduce_tail);
    if (zero12 && !job_.options.overlap_dp) {
      for (const ChunkPlan& c : st.chunks) {
        for (auto it = c.buckets.rbegin(); it != c.buckets.rend(); ++it) {
          double unused = 0;
          for (TaskId g : param_gather(*it, static_cast<int32_t>(c.info.virtual_index),
                                       static_cast<int32_t>(c.info.model_chunk), -1, &unused)) {
            dep(g, opt);
          }
        }
      }
    }
  }

  /// Activation (or gradient) bytes passed between stages per micro-batch:
  /// the SP-sharded tensor with sequence parallelism.
  double transfer_bytes() const { return transfer_bytes_; }

  void link_pipeline() {
    const int64_t chunks_total = p_ * v_;
    for (size_t ri = 0; ri < s_.ranks.size(); ++ri) {
      const int64_t rank = s_.ranks[ri];
      const int64_t stage = s_.layout.stage(rank);
      for (int64_t mb = 0; mb < m_; ++mb) {
        for (int64_t c = 0; c < v_; ++c) {
          const auto key = static_cast<size_t>(mb * v_ + c);
          const int64_t k = c * p_ + stage;
          if (k > 0) {
            const int64_t src_stage = (stage - 1 + p_) % p_;
            const int64_t src_chunk = stage == 0 ? c - 1 : c;
            const Tables& src = tables_[source_index(rank, src_stage)];
            dep(tables_[ri].f_first[key], src.send_next[static_cast<size_t>(mb * v_ + src_chunk)]);
          }
          if (k < chunks_total - 1) {
            const int64_t src_stage = (stage + 1) % p_;
            const int64_t src_chunk = stage == p_ - 1 ? c + 1 : c;
            const Tables& src = tables_[source_index(rank, src_stage)];
            dep(tables_[ri].b_first[key], src.send_prev[static_cast<size_t>(mb * v_ + src_chunk)]);
          }
        }
      }
    }
  }
  size_t source_index(int64_t rank, int64_t stage) const {
    return static_cast<size_t>(s_.rank_index(s_.layout.on_stage(rank, stage)));
  }

  void finish_deps() {
    std::sort(edges_.begin(), edges_.end());
    edges_.erase(std::unique(edges_.begin(), edges_.end()), edges_.end());
    s_.deps.reserve(edges_.size());
    size_t e = 0;
    for (size_t t = 0; t < s_.tasks.size(); ++t) {
      s_.tasks[t].dep_begin = static_cast<uint32_t>(s_.deps.size());
      while (e < edges_.size() && edges_[e].first == t) s_.deps.push_back(edges_[e++].second);
      s_.tasks[t].dep_count = static_cast<uint32_t>(s_.deps.size()) - s_.tasks[t].dep_begin;
    }
  }

  const Job& job_;
  Schedule s_;
  int64_t p_ = 1, v_ = 1, m_ = 1;
  bool zb_ = false, recompute_ = false, needs_sync_ = false, per_mb_sync_ = false;
  int zero_ = 0;
  int64_t shard_ = 1, grad_group_ = 1, edp_ = 1;
  LayerActivations acts_;
  double transfer_bytes_ = 0;
  std::vector<Stage> stages_;
  std::vector<Tables> tables_;
  std::vector<std::pair<TaskId, TaskId>> edges_;  // (after, before)
  std::map<std::tuple<int, int64_t, bool, bool>, int32_t> work_index_;
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

}  // namespace

std::vector<std::vector<Slot>> pipeline_orders(const Job& job) {
  const int64_t p = job.plan.pp, m = micro_batches(job);
  const int64_t v = job.plan.virtual_stages;
  std::vector<std::vector<Slot>> out(static_cast<size_t>(p));
  switch (job.plan.schedule) {
    case PipelineSchedule::kGpipe:
      for (auto& order : out) {
        for (int32_t i = 0; i < m; ++i) order.push_back({SlotKind::kForward, i, 0});
        for (int32_t i = 0; i < m; ++i) order.push_back({SlotKind::kBackward, i, 0});
      }
      return out;
    case PipelineSchedule::kOneFOneB:
    case PipelineSchedule::kInterleavedOneFOneB:
      for (int64_t s = 0; s < p; ++s) {
        out[static_cast<size_t>(s)] = one_f_one_b(p, v, m, s, SlotKind::kBackward);
      }
      return out;
    case PipelineSchedule::kZeroBubble:
      return zero_bubble_h1(p, m);
  }
  return out;
}

std::span<const TaskId> Schedule::dependencies(TaskId task) const {
  const Task& t = tasks[task];
  return {deps.data() + t.dep_begin, t.dep_count};
}

std::span<const Task> Schedule::rank_tasks(size_t rank_index) const {
  return {tasks.data() + rank_begin[rank_index],
          rank_begin[rank_index + 1] - rank_begin[rank_index]};
}

int64_t Schedule::rank_index(int64_t rank) const {
  auto it = std::lower_bound(ranks.begin(), ranks.end(), rank);
  if (it == ranks.end() || *it != rank) return -1;
  return it - ranks.begin();
}

std::string Schedule::task_name(TaskId task) const {
  const Task& t = tasks[task];
  std::string out = "r" + std::to_string(t.rank) + " ";
  switch (t.kind) {
    case TaskKind::kForward:
      out += "F";
      break;
    case TaskKind::kBackward:
      out += "B";
      break;
    case TaskKind::kBackwardInput:
      out += "Bi";
      break;
    case TaskKind::kBackwardWeight:
      out += "W";
      break;
    case TaskKind::kRecompute:
      out += "R";
      break;
    case TaskKind::kOptimizer:
      out += "optimizer";
      break;
    case TaskKind::kComm:
      out += std::string(to_string(t.purpose)) + " " + std::string(to_string(t.collective));
      break;
  }
  if (t.micro_batch >= 0) out += " mb" + std::to_string(t.micro_batch);
  if (t.chunk >= 0 && job.plan.virtual_stages > 1) out += " c" + std::to_string(t.chunk);
  if (t.layer_end > t.layer_begin) {
    out += " L" + std::to_string(t.layer_begin) + "-" + std::to_string(t.layer_end);
  }
  if (t.embedding) out += " +emb";
  if (t.head) out += " +head";
  if (t.peer >= 0) out += " ->r" + std::to_string(t.peer);
  return out;
}

BuildResult build_schedule(const Job& job, Scope scope) {
  BuildResult result;
  result.problems = validate(job);
  if (!result.problems.empty()) return result;
  result.schedule = Builder(job, scope).build();
  return result;
}

std::string_view to_string(TaskKind kind) {
  switch (kind) {
    case TaskKind::kForward:
      return "forward";
    case TaskKind::kBackward:
      return "backward";
    case TaskKind::kBackwardInput:
      return "backward_input";
    case TaskKind::kBackwardWeight:
      return "backward_weight";
    case TaskKind::kRecompute:
      return "recompute";
    case TaskKind::kOptimizer:
      return "optimizer";
    case TaskKind::kComm:
      return "comm";
  }
  return "?";
}

std::string_view to_string(Stream stream) {
  switch (stream) {
    case Stream::kCompute:
      return "compute";
    case Stream::kTp:
      return "tp";
    case Stream::kCp:
      return "cp";
    case Stream::kEp:
      return "ep";
    case Stream::kPpSendNext:
      return "pp_send_next";
    case Stream::kPpSendPrev:
      return "pp_send_prev";
    case Stream::kDpGather:
      return "dp_gather";
    case Stream::kDpReduce:
      return "dp_reduce";
  }
  return "?";
}

std::string_view to_string(CommPurpose purpose) {
  switch (purpose) {
    case CommPurpose::kNone:
      return "none";
    case CommPurpose::kActivation:
      return "activation";
    case CommPurpose::kGradient:
      return "gradient";
    case CommPurpose::kGradSync:
      return "grad_sync";
    case CommPurpose::kGradReplicaSync:
      return "grad_replica_sync";
    case CommPurpose::kParamGather:
      return "param_gather";
    case CommPurpose::kEmbeddingSync:
      return "embedding_sync";
  }
  return "?";
}

std::string_view to_string(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return "all_reduce";
    case CollectiveKind::kAllGather:
      return "all_gather";
    case CollectiveKind::kReduceScatter:
      return "reduce_scatter";
    case CollectiveKind::kAllToAll:
      return "all_to_all";
    case CollectiveKind::kSendRecv:
      return "send_recv";
    case CollectiveKind::kBroadcast:
      return "broadcast";
  }
  return "?";
}

}  // namespace podsim::strategies
