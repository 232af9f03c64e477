// The data-parallel communication of a schedule: gradient all-reduces and
// reduce-scatters (with HSDP's replica all-reduce), per micro-batch or once
// per step, and the ZeRO parameter all-gathers, prefetched or not.
#include <algorithm>
#include <vector>

#include "strategies/schedule_builder.h"

namespace podsim::strategies::schedule_detail {

uint8_t Builder::shard_calls(const Piece& p) const {
  if (zero_ != 3 || job_.software.data_parallel.param_gather != ParamGather::kParameter) return 1;
  const int64_t tensors = partitioned_parameter_tensors(job_, p.range);
  return static_cast<uint8_t>(std::clamp<int64_t>(tensors, 1, kMaxCommCalls));
}

void Builder::grad_sync(const Piece& p, const Slot* slot, int32_t chunk, bool final, TaskId after,
                        std::array<size_t, 2> grads) {
  if (!needs_sync_) return;
  const double g = grad_element_bytes(job_);
  const int32_t mb = slot != nullptr ? slot->micro_batch : -1;
  TaskId last = kNoTask;
  // `reduced`: the unreduced gradients the reduce-scatter gives back.
  auto emit = [&](CommPurpose purpose, CollectiveKind kind, GroupKind gk, double bytes,
                  size_t reduced, bool expert) {
    Task t =
        comm(Stream::kDpReduce, purpose, kind, Dim::kDp, group(rank_, gk), bytes, p, chunk, mb);
    if (gk == GroupKind::kShard) t.calls = shard_calls(p);
    last = add(t);
    release(reduced, last);
    if (kind == CollectiveKind::kReduceScatter) on_reduce_scatter(last, p, chunk, expert, reduced);
    dep(last, after);
  };
  if (p.params.dense > 0 && grad_group_ > 1) {
    const double bytes = p.params.dense * g;
    if (zero_ == 0) {
      emit(CommPurpose::kGradSync, CollectiveKind::kAllReduce, GroupKind::kDpCp, bytes, kNoBuffer,
           false);
    } else {
      if (shard_ > 1) {
        emit(CommPurpose::kGradSync, CollectiveKind::kReduceScatter, GroupKind::kShard, bytes,
             grads[0], false);
      }
      if (final && grad_group_ / shard_ > 1) {
        emit(CommPurpose::kGradReplicaSync, CollectiveKind::kAllReduce, GroupKind::kReplica,
             bytes / d(shard_), kNoBuffer, false);
      }
    }
  }
  if (p.params.expert > 0 && edp_ > 1) {
    const double bytes = p.params.expert * g;
    emit(CommPurpose::kGradSync,
         zero_ == 0 ? CollectiveKind::kAllReduce : CollectiveKind::kReduceScatter,
         GroupKind::kExpertDp, bytes, grads[1], true);
  }
  if (chunk >= 0 && last != kNoTask) last_grad_sync_[static_cast<size_t>(chunk)] = last;
  if (!overlap_grad_reduce_ && last != kNoTask) blocking_.push_back(last);
}

std::vector<TaskId> Builder::param_gather(const Piece& p, int32_t chunk, int32_t mb,
                                          std::vector<size_t>* gathered) {
  std::vector<TaskId> out;
  const double e = weight_element_bytes(job_);
  // One NCCL stream per device and process group: where the framework
  // gathers and reduces over the same group, the two run in issue order.
  const Stream stream =
      job_.software.data_parallel.shared_collective_stream ? Stream::kDpReduce : Stream::kDpGather;
  auto emit = [&](GroupKind gk, double params, int64_t size, bool expert) {
    if (params <= 0 || size <= 1) return;
    Task gather = comm(stream, CommPurpose::kParamGather, CollectiveKind::kAllGather, Dim::kDp,
                       group(rank_, gk), params * e, p, chunk, mb);
    if (gk == GroupKind::kShard) gather.calls = shard_calls(p);
    const TaskId t = add(gather);
    out.push_back(t);
    if (zero_ != 3) return;
    // The gathered weights: the other ranks' shards around this one's, or a
    // whole new copy (the shard kept apart, or in fp32 as FSDP's master);
    // FSDP1's, and FSDP2's all-gather buffers, in the gather stream's pool.
    const MemoryPolicy& m = job_.software.memory;
    const bool copy = m.gathered_weights != GatheredWeights::kBesideShard ||
                      m.param_storage == ParamStorage::kMasterOnly;
    const double fraction = copy ? 1.0 : 1.0 - 1.0 / d(size);
    auto weights = [&] {
      std::vector<double> tensors;
      for (const ParamTensor& w : range_parameter_tensors(job_, p.range)) {
        if (w.expert == expert) tensors.push_back(w.elements * e * fraction);
      }
      return tensors;
    };
    const uint32_t list =
        piece_list(expert ? PieceList::kExpertGathered : PieceList::kDenseGathered, p, weights);
    const Stream pool = m.gathered_weights == GatheredWeights::kFlatSideStream ? Stream::kDpGather
                                                                               : Stream::kCompute;
    gathered->push_back(hold(t, list, 1, MemoryKind::kTemporaries, Lifetime::kStep, pool));
    if (m.gathered_weights == GatheredWeights::kCopyOut) {
      // FSDP2's all-gather input (the shard) and flat output, while it runs.
      hold(t, {params * e / d(size), params * e}, 1, MemoryKind::kTemporaries, Lifetime::kStep,
           Stream::kDpGather);
    }
  };
  emit(GroupKind::kShard, p.params.dense, shard_, false);
  emit(GroupKind::kExpertDp, p.params.expert, edp_, true);
  return out;
}

std::vector<TaskId> Builder::zero3_gather(const Piece& p, const Slot& slot, bool prefetch,
                                          std::vector<size_t>* gathered, size_t consumers_ahead) {
  std::vector<TaskId> gathers = param_gather(p, slot.chunk, slot.micro_batch, gathered);
  const size_t back = (job_.options.overlap_dp && prefetch ? 2 : 1) - consumers_ahead;
  if (consumers_.size() >= back) {
    for (TaskId g : gathers) dep(g, consumers_[consumers_.size() - back]);
  }
  return gathers;
}

}  // namespace podsim::strategies::schedule_detail
