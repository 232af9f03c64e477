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

Piece piece_of(const Job& job, int64_t begin, int64_t end, bool embedding, bool head) {
  Piece p{begin, end, embedding, head, {}};
  add_params(p.params, layer_parameters(job), d(end - begin));
  if (embedding) add_params(p.params, embedding_parameters(job));
  if (head) add_params(p.params, head_parameters(job));
  return p;
}

}  // namespace

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
  Piece open{c.layer_end, c.layer_end, false, false, {}};
  auto close = [&]() {
    if (open.layers() > 0 || open.embedding || open.head) cp.buckets.push_back(open);
    open = Piece{open.layer_begin, open.layer_begin, false, false, {}};
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
  return cp;
}

}  // namespace podsim::strategies::schedule_detail
