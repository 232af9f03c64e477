// The layer ranges tasks cover: a chunk whole, in ZeRO-3 units, in gradient
// buckets (Megatron's bucket sizes, filled in backward order).
#include <algorithm>

#include "strategies/schedule_builder.h"

namespace podsim::strategies::schedule_detail {
namespace {

void add_params(StageParams& to, const StageParams& from, double times = 1.0) {
  to.dense += times * from.dense;
  to.expert += times * from.expert;
}

/// Sets what a piece of chunk `c` covers from its layer range and flags.
void set_range(const Job& job, const ChunkInfo& c, Piece& p) {
  p.range = {layer_runs(job, c, p.layer_begin, p.layer_end), p.embedding, p.head, p.mtp};
  p.range.chunk_first_layer = p.layers() > 0 && p.layer_begin == c.layer_begin;
  p.range.chunk_last_layer = p.layers() > 0 && p.layer_end == c.layer_end;
}

Piece piece_of(const Job& job, const ChunkInfo& c, int64_t begin, int64_t end, bool embedding,
               bool head, int64_t mtp) {
  Piece p;
  p.layer_begin = begin;
  p.layer_end = end;
  p.embedding = embedding;
  p.head = head;
  p.mtp = mtp;
  set_range(job, c, p);
  p.params = range_parameters(job, p.range);
  return p;
}

}  // namespace

ChunkPlan plan_chunk(const Job& job, const ChunkInfo& c) {
  ChunkPlan cp;
  cp.info = c;
  cp.whole = piece_of(job, c, c.layer_begin, c.layer_end, c.has_embedding, c.has_head, c.mtp);
  const int64_t unit = job.options.fsdp_unit_layers;
  for (int64_t l = c.layer_begin; l < c.layer_end || (l == c.layer_begin && c.layers() == 0);
       l += unit) {
    const int64_t end = std::min(l + unit, c.layer_end);
    const bool last = end == c.layer_end;
    cp.units.push_back(piece_of(job, c, l, end, c.has_embedding && l == c.layer_begin,
                                c.has_head && last, last ? c.mtp : 0));
    if (c.layers() == 0) break;
  }
  // Buckets in backward order: head, last layer ... first layer, embedding;
  // a bucket closes once it holds the bucket size (Megatron fills buckets in
  // the reverse order of the parameters, so they are ready in backward order).
  const int64_t threshold =
      job.options.dp_bucket_params > 0
          ? job.options.dp_bucket_params
          : std::max(kMegatronBucketFloor, kMegatronBucketPerRank * grad_group_size(job));
  Piece open;
  open.layer_begin = open.layer_end = c.layer_end;
  auto close = [&]() {
    if (open.layers() > 0 || open.embedding || open.head || open.mtp > 0) {
      set_range(job, c, open);
      open.params = range_parameters(job, open.range);
      cp.buckets.push_back(open);
    }
    Piece next;
    next.layer_begin = next.layer_end = open.layer_begin;
    open = next;
  };
  auto full = [&]() { return open.params.total() >= d(threshold); };
  if (c.has_head || c.mtp > 0) {
    open.head = c.has_head;
    open.mtp = c.mtp;
    set_range(job, c, open);
    open.params = range_parameters(job, open.range);
    if (full()) close();
  }
  for (int64_t l = c.layer_end - 1; l >= c.layer_begin; --l) {
    open.layer_begin = l;
    add_params(open.params, layer_parameters(job, layer_runs(job, c, l, l + 1).front().kind));
    if (full()) close();
  }
  if (c.has_embedding) {
    open.embedding = true;
    add_params(open.params, embedding_parameters(job));
  }
  close();
  return cp;
}

}  // namespace podsim::strategies::schedule_detail
