#include "strategies/schedule_builder.h"

#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

namespace podsim::strategies::schedule_detail {

Builder::Builder(const Job& job, Scope scope, size_t max_tasks, int64_t replica_rank)
    : job_(job), max_tasks_(max_tasks) {
  s_.job = job;
  s_.scope = scope;
  s_.layout = Layout(job.plan);
  s_.micro_batches = micro_batches(job);
  p_ = job.plan.pp;
  v_ = chunks_per_stage(job);
  m_ = s_.micro_batches;
  dualpipe_ = job.plan.schedule == PipelineSchedule::kDualPipe;
  zero_ = job.plan.zero;
  recompute_ = job.plan.recompute.mode != RecomputeMode::kNone;
  shard_ = shard_group_size(job);
  grad_group_ = grad_group_size(job);
  edp_ = expert_dp_size(job);
  needs_sync_ = grad_group_ > 1 || (job.model.moe.has_value() && edp_ > 1);
  per_mb_sync_ = zero_ == 3 || (zero_ == 2 && zero2_reduces_every_micro_batch(job));
  overlap_grad_reduce_ =
      job.options.overlap_dp && job.software.data_parallel.grad_reduce == GradReduce::kOverlapped;
  sync_after_chunk_ = p_ > 1 && overlap_grad_reduce_ && !per_mb_sync_ &&
                      job.software.pipeline_grad_sync == PipelineGradSync::kAfterLastBackward;
  const RankShape r = rank_shape(job);
  transfer_bytes_ = d(r.norm_tokens) * d(r.hidden) * r.e;
  intern_lists();
  if (scope == Scope::kEveryRank) {
    for (int64_t rank = 0; rank < s_.layout.world(); ++rank) s_.ranks.push_back(rank);
  } else {
    for (int64_t st = 0; st < p_; ++st) s_.ranks.push_back(s_.layout.on_stage(replica_rank, st));
    std::sort(s_.ranks.begin(), s_.ranks.end());
  }
  const std::vector<std::vector<Slot>> orders = pipeline_orders(job);
  stages_.resize(static_cast<size_t>(p_));
  for (int64_t st = 0; st < p_; ++st) {
    Stage& stage = stages_[static_cast<size_t>(st)];
    for (const ChunkInfo& c : stage_chunks(job, st)) stage.chunks.push_back(plan_chunk(job, c));
    stage.order = orders[static_cast<size_t>(st)];
    stage.last_grad_slot.assign(static_cast<size_t>(v_), -1);
    for (size_t i = 0; i < stage.order.size(); ++i) {
      const Slot& slot = stage.order[i];
      const auto index = static_cast<int64_t>(i);
      if (slot.kind == SlotKind::kBackward || slot.kind == SlotKind::kBackwardWeight) {
        stage.last_grad_slot[static_cast<size_t>(slot.chunk)] = index;
      } else if (slot.kind == SlotKind::kForwardBackward) {
        stage.last_grad_slot[static_cast<size_t>(slot.backward_chunk)] = index;
      }
    }
  }
}

Schedule Builder::build() {
  tables_.resize(s_.ranks.size());
  choose_buffer_ranks();
  reserve_every_rank();
  for (size_t ri = 0; ri < s_.ranks.size(); ++ri) {
    s_.rank_begin.push_back(static_cast<uint32_t>(s_.tasks.size()));
    const size_t buffers_before = s_.buffers.size();
    build_rank(ri);
    // The rank runs its stage's pattern (the rank whose buffers are kept)
    // with its own rank, peers and groups: keep only those.
    const uint32_t pattern = s_.buffer_ranks[static_cast<size_t>(stage_)];
    if (pattern != ri) s_.buffers.resize(buffers_before);
    if (pattern < ri) s_.tasks.share_pattern(s_.rank_begin[ri], s_.rank_begin[pattern]);
  }
  s_.rank_begin.push_back(static_cast<uint32_t>(s_.tasks.size()));
  link_pipeline();
  finish_deps();
  return std::move(s_);
}

void Builder::choose_buffer_ranks() {
  constexpr auto kNone = std::numeric_limits<uint32_t>::max();
  s_.buffer_ranks.assign(static_cast<size_t>(p_), kNone);
  for (size_t ri = 0; ri < s_.ranks.size(); ++ri) {
    const int64_t rank = s_.ranks[ri];
    uint32_t& kept = s_.buffer_ranks[static_cast<size_t>(s_.layout.stage(rank))];
    if (kept == kNone || s_.layout.is_representative(rank)) kept = static_cast<uint32_t>(ri);
  }
}

void Builder::reserve_every_rank() {
  // Every rank of a stage has its representative's tasks, edges and buffers: count
  // them on the representatives and reserve exactly. (Reserving the largest
  // count seen so far for every rank left held up to twice the tasks a job
  // with unequal stages needs, and a doubling vector as many.)
  if (s_.scope != Scope::kEveryRank) return;
  Builder reps(job_, Scope::kRepresentatives, max_tasks_);
  reps.tables_.resize(reps.s_.ranks.size());
  std::vector<size_t> tasks(static_cast<size_t>(p_), 0), edges(static_cast<size_t>(p_), 0),
      buffers(static_cast<size_t>(p_), 0);
  for (size_t ri = 0; ri < reps.s_.ranks.size(); ++ri) {
    const size_t tasks_before = reps.s_.tasks.size(), edges_before = reps.edges_.size(),
                 buffers_before = reps.s_.buffers.size();
    reps.build_rank(ri);
    const auto st = static_cast<size_t>(reps.stage_);
    tasks[st] = reps.s_.tasks.size() - tasks_before;
    edges[st] = reps.edges_.size() - edges_before;
    buffers[st] = reps.s_.buffers.size() - buffers_before;
  }
  const auto ranks_per_stage = static_cast<size_t>(s_.layout.world() / p_);
  const auto pipeline_links = static_cast<size_t>(2 * m_ * v_);  // link_pipeline, per rank
  // Whole tasks and buffers: one rank's per stage, and room for the rank
  // being built.
  size_t all_tasks = 0, pattern_tasks = 0, most_tasks = 0, all_edges = 0, all_buffers = 0,
         most_buffers = 0;
  for (size_t st = 0; st < tasks.size(); ++st) {
    all_tasks += ranks_per_stage * tasks[st];
    pattern_tasks += tasks[st];
    most_tasks = std::max(most_tasks, tasks[st]);
    all_edges += ranks_per_stage * (edges[st] + pipeline_links);
    all_buffers += buffers[st];
    most_buffers = std::max(most_buffers, buffers[st]);
  }
  all_buffers += most_buffers;
  s_.tasks.reserve(pattern_tasks + most_tasks, all_tasks);
  edges_.reserve(all_edges);
  s_.buffers.reserve(all_buffers);
}

int32_t Builder::work(Pass pass, const Piece& piece) {
  auto key = std::make_pair(static_cast<int>(pass), piece.range);
  auto it = work_index_.find(key);
  if (it != work_index_.end()) return it->second;
  const auto index = static_cast<int32_t>(s_.works.size());
  s_.works.push_back(make_work(job_, pass, piece.range));
  work_index_.emplace(std::move(key), index);
  return index;
}

int32_t Builder::pair_work(const Piece& forward, const Piece& backward) {
  auto key = std::make_pair(forward.range, backward.range);
  auto it = pair_index_.find(key);
  if (it != pair_index_.end()) return it->second;
  const auto index = static_cast<int32_t>(s_.works.size());
  Work w = make_work(job_, Pass::kForward, forward.range);
  w.name = "forward & backward";
  w.overlap_ep_comm = true;
  for (const Pass pass : {Pass::kRecompute, Pass::kBackward}) {
    Work part = make_work(job_, pass, backward.range);
    w.host_copy_in_bytes += part.host_copy_in_bytes;
    for (Segment& seg : part.segments) w.segments.push_back(std::move(seg));
  }
  s_.works.push_back(std::move(w));
  pair_index_.emplace(std::move(key), index);
  return index;
}

int32_t Builder::optimizer_work(double params, double tensors) {
  auto it = optimizer_index_.find({params, tensors});
  if (it != optimizer_index_.end()) return it->second;
  const auto index = static_cast<int32_t>(s_.works.size());
  Work w;
  w.name = "optimizer";
  w.segments.push_back({"optimizer", 1, optimizer_ops(job_, params, tensors)});
  w.host.dtensor_dispatches = optimizer_dtensor_dispatches(job_, tensors);
  s_.works.push_back(std::move(w));
  optimizer_index_.emplace(std::make_pair(params, tensors), index);
  return index;
}

int32_t Builder::find_group(int64_t rank, GroupKind kind) {
  std::vector<int64_t> members = s_.layout.group(rank, kind);
  auto it = group_index_.find(members);
  if (it != group_index_.end()) return it->second;
  const auto index = static_cast<int32_t>(s_.groups.size());
  group_index_.emplace(members, index);
  s_.groups.push_back({kind, std::move(members)});
  return index;
}

void Builder::build_rank(size_t ri) {
  rank_ = s_.ranks[ri];
  stage_ = s_.layout.stage(rank_);
  const Stage& st = stages_[static_cast<size_t>(stage_)];
  Tables& tb = tables_[ri];
  const auto slots = static_cast<size_t>(m_ * v_);
  for (auto* v : {&tb.f_first, &tb.f_last, &tb.send_next, &tb.b_first, &tb.b_last, &tb.send_prev}) {
    v->assign(slots, kNoTask);
  }
  blocking_.clear();
  consumers_.clear();
  group_seq_.clear();
  last_on_stream_.fill(kNoTask);
  group_cache_.fill(-1);
  last_compute_ = kNoTask;
  kept_.assign(slots, {});
  stage_outputs_.assign(slots, kNoBuffer);
  until_step_end_.clear();
  chunk_grads_.assign(static_cast<size_t>(v_), kNoBuffer);
  chunk_grads_held_.assign(static_cast<size_t>(v_), false);
  last_grad_sync_.assign(static_cast<size_t>(v_), kNoTask);
  reduced_shards_.clear();
  const auto first_task = static_cast<TaskId>(s_.tasks.size());
  const bool zero12 = zero_ == 1 || zero_ == 2;
  const DataParallelPolicy& dp = job_.software.data_parallel;
  // ZeRO-1/2 with overlap: the parameter all-gathers of the previous
  // step's update run at the start of this step, bucket by bucket, and the
  // first forward of each chunk runs in bucket pieces, each waiting for its
  // own bucket (Megatron's overlapped param gather, where the software
  // prefetches in the forward); otherwise they follow the optimizer step.
  const bool gathers_in_forward = zero12 && job_.options.overlap_dp && dp.forward_prefetch;
  std::vector<std::vector<std::vector<TaskId>>> chunk_gathers(static_cast<size_t>(v_));
  if (gathers_in_forward) {
    for (const ChunkPlan& c : st.chunks) {
      auto& per_bucket = chunk_gathers[static_cast<size_t>(c.info.virtual_index)];
      for (auto it = c.buckets.rbegin(); it != c.buckets.rend(); ++it) {
        per_bucket.push_back(
            param_gather(*it, static_cast<int32_t>(c.info.virtual_index), -1, nullptr));
      }
    }
  }
  std::vector<bool> chunk_started(static_cast<size_t>(v_), false);
  // FSDP1's BACKWARD_POST issues the next unit's gather after the current
  // unit's gradients, DeepSpeed's 2021 ZeRO-3 when a unit is reached:
  // either way the backward waits for it.
  const bool backward_prefetch = dp.backward_prefetch == BackwardPrefetch::kPre;

  for (size_t si = 0; si < st.order.size(); ++si) {
    const Slot& slot = st.order[si];
    const ChunkPlan& c = st.chunks[static_cast<size_t>(slot.chunk)];
    const auto key = static_cast<size_t>(slot.micro_batch * v_ + slot.chunk);
    const bool last_grad =
        static_cast<int64_t>(si) == st.last_grad_slot[static_cast<size_t>(slot.chunk)];
    // Pieces of a gradient-producing slot: buckets when their reduction
    // overlaps this slot, ZeRO-3 units, or the whole chunk.
    auto grad_pieces = [&]() -> const std::vector<Piece>* {
      if (zero_ == 3) return nullptr;  // units, reversed
      if (!needs_sync_) return nullptr;
      if (per_mb_sync_) return &c.buckets;
      if (last_grad && overlap_grad_reduce_ && !sync_after_chunk_) return &c.buckets;
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
        std::vector<size_t> gathered;
        std::vector<TaskId> gathers;
        if (zero_ == 3) gathers = zero3_gather(p, slot, dp.forward_prefetch, &gathered);
        if (by_bucket) gathers = bucket_gathers[i];
        const TaskId f = add(compute(TaskKind::kForward, slot, p, work(Pass::kForward, p)));
        on_forward(f, c, p, key, first_of_chunk);
        release(gathered, f);
        for (TaskId g : gathers) dep(f, g);
        if (zero_ == 3) consumers_.push_back(f);
        if (i == 0) tb.f_first[key] = f;
        tb.f_last[key] = f;
      }
      on_chunk_forward_end(tb.f_last[key], c, key);
      send_forward(c, slot.chunk, slot.micro_batch, tb);
      continue;
    }

    if (slot.kind == SlotKind::kForwardBackward) {
      // DualPipe's overlapped pair: one computation, whole chunks (no bucket
      // pieces), its gradients reduced after it when it is the chunk's last.
      const ChunkPlan& fc = c;
      const ChunkPlan& bc = st.chunks[static_cast<size_t>(slot.backward_chunk)];
      const auto bkey = static_cast<size_t>(slot.backward_micro_batch * v_ + slot.backward_chunk);
      const bool last_b =
          static_cast<int64_t>(si) == st.last_grad_slot[static_cast<size_t>(slot.backward_chunk)];
      const TaskId id =
          add(compute(TaskKind::kForwardBackward, slot, fc.whole, pair_work(fc.whole, bc.whole)));
      on_forward(id, fc, fc.whole, key, !chunk_started[static_cast<size_t>(slot.chunk)]);
      chunk_started[static_cast<size_t>(slot.chunk)] = true;
      if (recompute_) {
        // The backward half's recompute, brought back and freed inside the pair.
        const RecomputeTensors back = range_recompute_tensors(
            layer_tensors_, job_, bc.info, bc.whole.layer_begin, bc.whole.layer_end);
        const uint32_t list =
            piece_list(PieceList::kRecomputed, bc.whole, [&] { return back.tensors; });
        release(hold(id, list, back.repeats, MemoryKind::kTemporaries), id);
      }
      release_kept(id, bc, bc.whole, bkey, Kept::kAll);
      const std::array<size_t, 2> grads = hold_micro_batch_grads(id, bc.whole);
      on_backward(id, bc, bc.whole, true);
      tb.f_first[key] = tb.f_last[key] = id;
      tb.b_first[bkey] = tb.b_last[bkey] = id;
      dep(id, tb.f_last[bkey]);  // the backward's own forward
      Slot backward = slot;
      backward.micro_batch = slot.backward_micro_batch;
      backward.chunk = slot.backward_chunk;
      if (sync_now(last_b)) {
        grad_sync(bc.whole, &backward, slot.backward_chunk, last_b, id, grads);
      } else if (last_b && sync_after_chunk_) {
        sync_chunk_after(bc, backward, id);
      }
      on_chunk_forward_end(id, fc, key);
      on_chunk_backward_end(id, bkey);
      send_forward(fc, slot.chunk, slot.micro_batch, tb);
      send_backward(bc, slot.backward_chunk, slot.backward_micro_batch, tb);
      continue;
    }

    if (slot.kind == SlotKind::kBackward || slot.kind == SlotKind::kBackwardInput) {
      const bool grad_slot = slot.kind == SlotKind::kBackward;
      const std::vector<Piece>* bucket_pieces = grad_slot ? grad_pieces() : nullptr;
      const std::vector<Piece> pieces = zero_ == 3      ? reversed_units()
                                        : bucket_pieces ? *bucket_pieces
                                                        : std::vector<Piece>{c.whole};
      TaskId b = kNoTask;
      // FSDP's pre-backward hook of a unit issues the next unit's gather
      // before the unit's gradients are reduced: on a collective stream
      // shared with the reductions the prefetch must come first, so it is
      // made one piece early (the same dependency, an earlier place).
      const bool prefetch_early = zero_ == 3 && backward_prefetch && job_.options.overlap_dp &&
                                  dp.shared_collective_stream && !dp.regather_for_recompute;
      std::vector<size_t> next_gathered;
      std::vector<TaskId> next_gathers;
      for (size_t i = 0; i < pieces.size(); ++i) {
        const Piece& p = pieces[i];
        std::vector<size_t> gathered;
        std::vector<TaskId> gathers;
        if (zero_ == 3 && prefetch_early && i > 0) {
          gathers = std::move(next_gathers);
          gathered = std::move(next_gathered);
          next_gathers.clear();
          next_gathered.clear();
        } else if (zero_ == 3) {
          gathers = zero3_gather(p, slot, backward_prefetch, &gathered);
        }
        if (prefetch_early && i + 1 < pieces.size()) {
          next_gathers = zero3_gather(pieces[i + 1], slot, backward_prefetch, &next_gathered, 1);
        }
        TaskId first = kNoTask;
        size_t recomputed = kNoBuffer;
        std::vector<TaskId> regathered;
        if (recompute_) {
          // DeepSpeed: the recompute's post-forward hook releases the
          // weights and the backward's pre-hook gathers them again.
          const bool regather = zero_ == 3 && dp.regather_for_recompute;
          first = add(compute(TaskKind::kRecompute, slot, p, work(Pass::kRecompute, p)));
          // One layer (every C: C layers) brought back at a time.
          const RecomputeTensors back =
              range_recompute_tensors(layer_tensors_, job_, c.info, p.layer_begin, p.layer_end);
          const uint32_t list = piece_list(PieceList::kRecomputed, p, [&] { return back.tensors; });
          recomputed = hold(first, list, back.repeats, MemoryKind::kTemporaries);
          for (TaskId g : gathers) dep(first, g);
          if (regather) {
            release(gathered, first);
            gathered.clear();
            consumers_.push_back(first);
            regathered = zero3_gather(p, slot, false, &gathered);
          }
        }
        b = add(compute(grad_slot ? TaskKind::kBackward : TaskKind::kBackwardInput, slot, p,
                        work(grad_slot ? Pass::kBackward : Pass::kBackwardInput, p)));
        for (TaskId g : regathered) dep(b, g);
        release(recomputed, b);
        release(gathered, b);
        std::array<size_t, 2> grads{kNoBuffer, kNoBuffer};
        if (grad_slot) {
          release_kept(b, c, p, key, Kept::kAll);
          grads = hold_micro_batch_grads(b, p);
        } else {
          // Zero-bubble B keeps the GEMM inputs (recomputed ones too) and the
          // output gradients for W.
          release_kept(b, c, p, key, inputs_recomputed() ? Kept::kAll : Kept::kAllButWeightInputs);
          hold_for_weight_pass(b, c, p, key);
        }
        on_backward(b, c, p, grad_slot);
        if (first == kNoTask) {
          first = b;
          for (TaskId g : gathers) dep(b, g);
        }
        if (zero_ == 3) consumers_.push_back(b);
        if (i == 0) {
          tb.b_first[key] = first;
          dep(first, tb.f_last[key]);  // every forward precedes its backward
        }
        if (grad_slot && sync_now(last_grad)) {
          grad_sync(p, &slot, slot.chunk, last_grad, b, grads);
        }
      }
      tb.b_last[key] = b;
      on_chunk_backward_end(b, key);
      // The gradients sent back leave on the compute stream, which waits for
      // the chunk's reductions issued after its last backward.
      const TaskId sent_after = grad_slot && last_grad && sync_after_chunk_
                                    ? sync_chunk_after(c, slot, b)
                                    : tb.b_last[key];
      send_backward(c, slot.chunk, slot.micro_batch, tb, sent_after);
      continue;
    }

    // Zero-bubble W: weight gradients, no weights needed (no gather).
    const std::vector<Piece>* bucket_pieces = grad_pieces();
    const std::vector<Piece> pieces = zero_ == 3      ? reversed_units()
                                      : bucket_pieces ? *bucket_pieces
                                                      : std::vector<Piece>{c.whole};
    TaskId w = kNoTask;
    for (const Piece& p : pieces) {
      w = add(compute(TaskKind::kBackwardWeight, slot, p, work(Pass::kBackwardWeight, p)));
      release_kept(w, c, p, key, Kept::kWeightInputsAndOutputGrads);
      on_weight_grads(w, c, p);
      const std::array<size_t, 2> grads = hold_micro_batch_grads(w, p);
      dep(w, tb.b_last[key]);
      if (sync_now(last_grad)) grad_sync(p, &slot, slot.chunk, last_grad, w, grads);
    }
    if (last_grad && sync_after_chunk_) sync_chunk_after(c, slot, w);
  }

  // Reductions not overlapped with the backward pass run after it.
  if (needs_sync_ && !per_mb_sync_ && !overlap_grad_reduce_) {
    for (auto it = st.chunks.rbegin(); it != st.chunks.rend(); ++it) {
      for (const Piece& p : it->buckets) {
        grad_sync(p, nullptr, static_cast<int32_t>(it->info.virtual_index), true, last_compute_);
      }
    }
  }
  if (job_.model.tied_embeddings && p_ > 1 && (stage_ == 0 || stage_ == p_ - 1)) {
    const double bytes =
        d(rank_shape(job_).vocab) * d(job_.model.hidden) * grad_element_bytes(job_);
    Task t = comm(Stream::kDpReduce, CommPurpose::kEmbeddingSync, CollectiveKind::kAllReduce,
                  Dim::kPp, group(rank_, GroupKind::kEmbedding), bytes, Piece{}, -1, -1);
    t.embedding = stage_ == 0;
    t.head = stage_ == p_ - 1;
    dep(add(t), last_compute_);
  }
  const TaskId reduce_tail = last_on_stream_[static_cast<size_t>(Stream::kDpReduce)];
  Task o = compute(
      TaskKind::kOptimizer, Slot{}, Piece{},
      optimizer_work(optimizer_parameters(job_, stage_), stage_parameter_tensors(job_, stage_)));
  o.chunk = o.micro_batch = -1;
  blocking_.clear();
  const TaskId opt = add(o);
  dep(opt, reduce_tail);
  finish_rank_memory(first_task, opt, st);
  if (zero12 && !gathers_in_forward) {
    for (const ChunkPlan& c : st.chunks) {
      for (auto it = c.buckets.rbegin(); it != c.buckets.rend(); ++it) {
        for (TaskId g :
             param_gather(*it, static_cast<int32_t>(c.info.virtual_index), -1, nullptr)) {
          dep(g, opt);
        }
      }
    }
  }
}

int64_t Builder::next_stage(int64_t stage, int32_t chunk) const {
  if (dualpipe_ && chunk == 1) return stage - 1;  // the reverse direction
  return (stage + 1) % p_;
}
int64_t Builder::previous_stage(int64_t stage, int32_t chunk) const {
  if (dualpipe_ && chunk == 1) return stage + 1;
  return (stage - 1 + p_) % p_;
}

void Builder::send_forward(const ChunkPlan& c, int32_t chunk, int32_t micro_batch, Tables& tb) {
  if (c.info.model_chunk >= model_chunk_count(job_) - 1) return;
  const auto key = static_cast<size_t>(micro_batch * v_ + chunk);
  tb.send_next[key] =
      send_to_stage(Stream::kPpSendNext, CommPurpose::kActivation, next_stage(stage_, chunk),
                    tb.f_last[key], c, chunk, micro_batch);
}

void Builder::send_backward(const ChunkPlan& c, int32_t chunk, int32_t micro_batch, Tables& tb,
                            TaskId after) {
  if (c.info.model_chunk <= 0) return;
  const auto key = static_cast<size_t>(micro_batch * v_ + chunk);
  tb.send_prev[key] =
      send_to_stage(Stream::kPpSendPrev, CommPurpose::kGradient, previous_stage(stage_, chunk),
                    after != kNoTask ? after : tb.b_last[key], c, chunk, micro_batch);
}

TaskId Builder::sync_chunk_after(const ChunkPlan& c, const Slot& slot, TaskId after) {
  const auto chunk = static_cast<int32_t>(c.info.virtual_index);
  for (const Piece& p : c.buckets) {
    grad_sync(p, &slot, chunk, true, after);
  }
  const TaskId last = last_grad_sync_[static_cast<size_t>(chunk)];
  if (last != kNoTask) blocking_.push_back(last);
  return last != kNoTask ? last : after;
}

TaskId Builder::send_to_stage(Stream stream, CommPurpose purpose, int64_t stage, TaskId after,
                              const ChunkPlan& c, int32_t chunk, int32_t micro_batch) {
  Task t = comm(stream, purpose, CollectiveKind::kSendRecv, Dim::kPp, -1, transfer_bytes(), c.whole,
                chunk, micro_batch);
  t.peer = static_cast<int32_t>(s_.layout.on_stage(rank_, stage));
  const TaskId send = add(t);
  dep(send, after);
  if (!job_.options.overlap_pp) blocking_.push_back(send);
  return send;
}

void Builder::link_pipeline() {
  if (dualpipe_) {
    link_dualpipe();
    return;
  }
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

void Builder::link_dualpipe() {
  // Chunk d of every rank carries direction d's micro-batches: from rank
  // s-1 to s (d = 0) or s+1 to s (d = 1); each micro-batch has one chunk.
  const int64_t half = m_ / 2;
  for (size_t ri = 0; ri < s_.ranks.size(); ++ri) {
    const int64_t rank = s_.ranks[ri];
    const int64_t stage = s_.layout.stage(rank);
    for (int64_t mb = 0; mb < m_; ++mb) {
      const auto chunk = static_cast<int32_t>(mb < half ? 0 : 1);
      const auto key = static_cast<size_t>(mb * v_ + chunk);
      const int64_t before = previous_stage(stage, chunk), after = next_stage(stage, chunk);
      if (before >= 0 && before < p_ && (chunk == 1 || stage > 0)) {
        const Tables& src = tables_[source_index(rank, before)];
        dep(tables_[ri].f_first[key], src.send_next[key]);
      }
      if (after >= 0 && after < p_ && (chunk == 0 ? stage < p_ - 1 : stage > 0)) {
        const Tables& src = tables_[source_index(rank, after)];
        dep(tables_[ri].b_first[key], src.send_prev[key]);
      }
    }
  }
}

void Builder::finish_deps() {
  // Each task's dependencies ascending and without repeats: a counting sort
  // of the edges by task, then each task's few sorted in place (sorting all
  // the edges at once was a fifth of an every-rank build). Placing each edge
  // at its task's end, counted down, leaves that end at the task's begin.
  const size_t n = s_.tasks.size();
  sim::BulkVector<uint32_t> begin(n + 1, 0);
  for (const auto& edge : edges_) ++begin[edge.first];
  for (size_t t = 0; t < n; ++t) begin[t + 1] += begin[t];
  s_.deps.resize(edges_.size());
  for (const auto& [after, before] : edges_) s_.deps[--begin[after]] = before;
  edges_ = {};
  uint32_t kept = 0;
  for (size_t t = 0; t < n; ++t) {
    const auto first = s_.deps.begin() + begin[t];
    std::sort(first, s_.deps.begin() + begin[t + 1]);
    const auto last = std::unique(first, s_.deps.begin() + begin[t + 1]);
    const uint32_t dep_begin = kept;
    // Compaction: `kept` never passes begin[t], so this copies downwards.
    for (auto it = first; it != last; ++it) s_.deps[kept++] = *it;
    s_.tasks.set_dependencies(static_cast<TaskId>(t), dep_begin, kept - dep_begin);
  }
  s_.deps.resize(kept);
  sim::release_unused_capacity(s_.deps);
}

}  // namespace podsim::strategies::schedule_detail
