// The buffers a schedule's tasks hold: what each forward keeps for its
// backward, recomputed activations, gathered ZeRO-3 weights, unreduced
// gradients, and the rank's standing weights, gradients and optimizer states.
#include <vector>

#include "strategies/schedule_builder.h"

namespace podsim::strategies::schedule_detail {

std::vector<ParamTensor> piece_parameter_tensors(const Job& job, int64_t layers, bool embedding,
                                                 bool head) {
  std::vector<ParamTensor> out;
  if (head) out = head_parameter_tensors(job);
  const std::vector<ParamTensor> layer = layer_parameter_tensors(job);
  for (int64_t l = 0; l < layers; ++l) out.insert(out.end(), layer.begin(), layer.end());
  if (embedding) {
    const std::vector<ParamTensor> e = embedding_parameter_tensors(job);
    out.insert(out.end(), e.begin(), e.end());
  }
  return out;
}

uint32_t Builder::tensor_list(const std::vector<double>& tensors) {
  auto it = tensor_list_index_.find(tensors);
  if (it != tensor_list_index_.end()) return it->second;
  const auto index = static_cast<uint32_t>(s_.tensor_lists.size());
  double bytes = 0;
  for (double b : tensors) bytes += b;
  s_.tensor_lists.push_back(tensors);
  s_.tensor_list_bytes.push_back(bytes);
  tensor_list_index_.emplace(tensors, index);
  return index;
}

size_t Builder::hold(TaskId alloc, const std::vector<double>& tensors, int64_t repeats,
                     MemoryKind kind, Lifetime lifetime, Stream pool) {
  return hold(alloc, tensor_list(tensors), repeats, kind, lifetime, pool);
}

size_t Builder::hold(TaskId alloc, uint32_t list, int64_t repeats, MemoryKind kind,
                     Lifetime lifetime, Stream pool) {
  if (repeats <= 0 || s_.tensor_list_bytes[list] <= 0) return kNoBuffer;
  Buffer b;
  b.tensors = list;
  b.repeats = static_cast<uint32_t>(repeats);
  b.alloc = alloc;
  b.free = alloc;
  b.kind = kind;
  b.lifetime = lifetime;
  b.pool = pool;
  s_.buffers.push_back(b);
  return s_.buffers.size() - 1;
}

void Builder::keep_activations(TaskId forward, const ChunkPlan& c, const Piece& p, size_t key) {
  std::vector<KeptLayer>& kept = kept_[key];
  const auto layers = static_cast<size_t>(c.info.layers());
  if (kept.empty()) kept.resize(layers + 2);
  for (int64_t l = p.layer_begin; l < p.layer_end; ++l) {
    KeptLayer& k = kept[static_cast<size_t>(l - c.info.layer_begin)];
    if (lists_.split_weight_inputs) {
      // Zero-bubble W reads the GEMM inputs after B: kept apart.
      k.rest = hold(forward, lists_.rest, 1, MemoryKind::kActivations);
      k.weight_inputs = hold(forward, lists_.weight_inputs, 1, MemoryKind::kActivations);
    } else {
      const bool checkpoint = job_.plan.recompute.mode != RecomputeMode::kEvery ||
                              (l - c.info.layer_begin) % job_.plan.recompute.every_layers == 0;
      k.rest = hold(forward, checkpoint ? lists_.kept : lists_.kept_between_checkpoints, 1,
                    MemoryKind::kActivations);
    }
  }
  if (p.embedding) kept[layers].rest = hold(forward, lists_.embedding, 1, MemoryKind::kActivations);
  if (p.head) kept[layers + 1].rest = hold(forward, lists_.head, 1, MemoryKind::kActivations);
}

void Builder::intern_lists() {
  lists_.split_weight_inputs = zb_ && !inputs_recomputed();
  std::vector<double> rest = tensors_.other_saved;
  if (job_.plan.recompute.mode == RecomputeMode::kNone) {
    rest.insert(rest.end(), tensors_.core.begin(), tensors_.core.end());
  }
  lists_.rest = tensor_list(rest);
  lists_.weight_inputs = tensor_list(tensors_.weight_inputs);
  lists_.output_grads = tensor_list(tensors_.output_grads);
  // kept_tensors() of a checkpoint layer (every layer but under every-C)
  // and of a layer between checkpoints.
  ChunkInfo one;
  one.layer_begin = 0;
  one.layer_end = 2;
  lists_.kept = tensor_list(kept_tensors(job_, tensors_, one, 0));
  lists_.kept_between_checkpoints = tensor_list(kept_tensors(job_, tensors_, one, 1));
  lists_.embedding = tensor_list(embedding_tensors(job_));
  lists_.head = tensor_list(head_tensors(job_));
}

void Builder::release_kept(TaskId free, const ChunkPlan& c, const Piece& p, size_t key, Kept part) {
  std::vector<KeptLayer>& kept = kept_[key];
  const auto layers = static_cast<size_t>(c.info.layers());
  auto give_back = [&](KeptLayer& k) {
    if (part != Kept::kWeightInputsAndOutputGrads) release(k.rest, free);
    if (part != Kept::kAllButWeightInputs) {
      release(k.weight_inputs, free);
      release(k.output_grads, free);
    }
  };
  for (int64_t l = p.layer_begin; l < p.layer_end; ++l) {
    give_back(kept[static_cast<size_t>(l - c.info.layer_begin)]);
  }
  if (part == Kept::kWeightInputsAndOutputGrads) return;
  if (p.embedding) give_back(kept[layers]);
  if (p.head) give_back(kept[layers + 1]);
}

void Builder::hold_for_weight_pass(TaskId b, const ChunkPlan& c, const Piece& p, size_t key) {
  std::vector<KeptLayer>& kept = kept_[key];
  for (int64_t l = p.layer_begin; l < p.layer_end; ++l) {
    KeptLayer& k = kept[static_cast<size_t>(l - c.info.layer_begin)];
    if (inputs_recomputed())
      k.weight_inputs = hold(b, lists_.weight_inputs, 1, MemoryKind::kActivations);
    k.output_grads = hold(b, lists_.output_grads, 1, MemoryKind::kActivations);
  }
}

std::array<size_t, 2> Builder::hold_micro_batch_grads(TaskId producer, const Piece& p) {
  std::array<size_t, 2> out{kNoBuffer, kNoBuffer};
  if (!per_mb_sync_) return out;
  auto grads = [&](bool expert) {
    std::vector<double> tensors;
    for (const ParamTensor& t : piece_parameter_tensors(job_, p.layers(), p.embedding, p.head)) {
      if (t.expert == expert) tensors.push_back(t.elements * grad_element_bytes(job_));
    }
    return tensors;
  };
  // Waiting for their reduce-scatter: temporaries; the shard they leave is
  // the standing gradient.
  if (shard_ > 1) {
    out[0] = hold(producer, piece_list(PieceList::kDenseGrads, p, [&] { return grads(false); }), 1,
                  MemoryKind::kTemporaries);
  }
  if (edp_ > 1) {
    out[1] = hold(producer, piece_list(PieceList::kExpertGrads, p, [&] { return grads(true); }), 1,
                  MemoryKind::kTemporaries);
  }
  return out;
}

void Builder::hold_standing(TaskId first, TaskId optimizer, const Stage& st) {
  // Per parameter tensor, as ZeRO shards it; gradients stand unless they
  // are reduce-scattered every micro-batch (then only the shard stands).
  std::vector<double> weights, grads, master, moments;
  for (const ChunkPlan& c : st.chunks) {
    const ChunkInfo& i = c.info;
    for (const ParamTensor& t :
         piece_parameter_tensors(job_, i.layers(), i.has_embedding, i.has_head)) {
      const TensorState s = tensor_state(job_, t.elements, t.expert);
      weights.push_back(s.weights);
      grads.push_back(s.grads);
      master.push_back(s.master);
      moments.push_back(s.moments);
    }
  }
  hold(first, weights, 1, MemoryKind::kWeights, Lifetime::kPersistent);
  hold(first, grads, 1, MemoryKind::kGrads, Lifetime::kPersistent);
  hold(first, master, 1, MemoryKind::kOptimizer, Lifetime::kPersistent);
  // PyTorch optimizers (torch.optim, apex and Transformer Engine FusedAdam)
  // create their moments on their first step.
  hold(optimizer, moments, 1, MemoryKind::kOptimizer, Lifetime::kFromFirstStep);
}

}  // namespace podsim::strategies::schedule_detail
