// The data-parallel communication of a schedule: gradient all-reduces and
// reduce-scatters (with HSDP's replica all-reduce), per micro-batch or once
// per step, and the ZeRO parameter all-gathers, prefetched or not.
#include <vector>

#include "strategies/schedule_builder.h"

namespace podsim::strategies::schedule_detail {

void Builder::grad_sync(const Piece& p, const Slot* slot, int32_t chunk, int32_t model_chunk,
                        bool final, TaskId after) {
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

std::vector<TaskId> Builder::param_gather(const Piece& p, int32_t chunk, int32_t model_chunk,
                                          int32_t mb, double* allocated) {
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

std::vector<TaskId> Builder::zero3_gather(const Piece& p, const Slot& slot, const ChunkPlan& c,
                                          bool prefetch, double* allocated) {
  std::vector<TaskId> gathers = param_gather(
      p, slot.chunk, static_cast<int32_t>(c.info.model_chunk), slot.micro_batch, allocated);
  const size_t back = job_.options.overlap_dp && prefetch ? 2 : 1;
  if (consumers_.size() >= back) {
    for (TaskId g : gathers) dep(g, consumers_[consumers_.size() - back]);
  }
  return gathers;
}

}  // namespace podsim::strategies::schedule_detail
