// The buffers a schedule's tasks hold: what each forward keeps for its
// backward, recomputed activations, gathered ZeRO-3 weights, unreduced
// gradients, and the rank's standing weights, gradients and optimizer states.
#include <algorithm>
#include <vector>

#include "strategies/schedule_builder.h"

namespace podsim::strategies::schedule_detail {

namespace {

/// One layer of `range` (its largest by parameters) with its embedding,
/// head and MTP modules: what a framework that takes the gradients layer by
/// layer holds at once.
WorkRange one_layer_range(const Job& job, const WorkRange& range) {
  WorkRange one = range;
  one.runs.clear();
  double largest = -1;
  for (const LayerRun& run : range.runs) {
    const double params = layer_parameters(job, run.kind).total();
    if (run.count > 0 && params > largest) {
      largest = params;
      one.runs = {LayerRun{run.kind, 1}};
    }
  }
  return one;
}

}  // namespace

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
  if (kept.empty()) kept.resize(layers + 3);
  int64_t l = p.layer_begin;
  for (const LayerRun& run : p.range.runs) {
    const KindLists& lists = kind_lists(run.kind);
    for (int64_t i = 0; i < run.count; ++i, ++l) {
      KeptLayer& k = kept[static_cast<size_t>(l - c.info.layer_begin)];
      if (lists_.split_weight_inputs && !run.kind.full_recompute) {
        // Zero-bubble W reads the GEMM inputs after B: kept apart.
        k.rest = hold(forward, lists.rest, 1, MemoryKind::kActivations);
        k.weight_inputs = hold(forward, lists.weight_inputs, 1, MemoryKind::kActivations);
      } else {
        const bool checkpoint = job_.plan.recompute.mode != RecomputeMode::kEvery ||
                                (l - c.info.layer_begin) % job_.plan.recompute.every_layers == 0;
        k.rest = hold(forward, checkpoint ? lists.kept : lists.kept_between_checkpoints, 1,
                      MemoryKind::kActivations);
      }
    }
  }
  if (p.embedding) kept[layers].rest = hold(forward, lists_.embedding, 1, MemoryKind::kActivations);
  if (p.head) kept[layers + 1].rest = hold(forward, lists_.head, 1, MemoryKind::kActivations);
  if (p.mtp > 0) {
    kept[layers + 2].rest = hold(forward, lists_.mtp, p.mtp, MemoryKind::kActivations);
  }
}

void Builder::intern_lists() {
  // B and W apart: zero-bubble, and DualPipe's backward halves.
  lists_.split_weight_inputs =
      (job_.plan.schedule == PipelineSchedule::kZeroBubble || dualpipe_) && !inputs_recomputed();
  lists_.embedding = tensor_list(embedding_tensors(job_));
  lists_.head = tensor_list(head_tensors(job_));
  lists_.mtp = tensor_list(mtp_tensors(job_));
  const LossMemory loss = loss_memory(job_);
  const double logits = logit_elements(job_);
  auto per_logit = [&](const std::vector<double>& bytes) {
    std::vector<double> out;
    for (double b : bytes) out.push_back(b * logits);
    return out;
  };
  lists_.loss_forward = tensor_list(per_logit(loss.forward));
  lists_.loss_backward = tensor_list(per_logit(loss.backward));
  lists_.backward_working = tensor_list(backward_working_tensors(job_));
  lists_.stage_output = tensor_list({transfer_bytes_});
  lists_.logits = tensor_list({logits * rank_shape(job_).e});
}

const Builder::KindLists& Builder::kind_lists(const LayerKind& kind) {
  auto it = kind_lists_.find(kind);
  if (it != kind_lists_.end()) return it->second;
  const LayerTensors& tensors = layer_tensors_(kind);
  KindLists lists;
  std::vector<double> rest = tensors.other_saved;
  if (job_.plan.recompute.mode == RecomputeMode::kNone) {
    rest.insert(rest.end(), tensors.core.begin(), tensors.core.end());
  }
  lists.rest = tensor_list(rest);
  lists.weight_inputs = tensor_list(tensors.weight_inputs);
  lists.output_grads = tensor_list(tensors.output_grads);
  // kept_tensors() of a checkpoint layer (every layer but under every-C)
  // and of a layer between checkpoints.
  ChunkInfo one;
  one.layer_begin = 0;
  one.layer_end = 2;
  lists.kept = tensor_list(kept_tensors(job_, tensors, one, 0));
  lists.kept_between_checkpoints = tensor_list(kept_tensors(job_, tensors, one, 1));
  return kind_lists_.emplace(kind, lists).first->second;
}

void Builder::on_forward(TaskId f, const ChunkPlan& c, const Piece& p, size_t key,
                         bool first_of_chunk) {
  keep_activations(f, c, p, key);
  if (p.head) hold(f, lists_.loss_forward, 1, MemoryKind::kTemporaries);
  // FSDP without ZeRO-3 (reshard_after_forward=False; under PP torchtitan
  // also keeps them through the backward): the 16-bit weights the chunk's
  // first forward gathers stay for the step.
  const bool master_only = job_.software.memory.param_storage == ParamStorage::kMasterOnly;
  if (first_of_chunk && master_only && zero_ <= 2 &&
      job_.training.precision != sim::NumberFormat::kFp32) {
    const double e = weight_element_bytes(job_);
    const uint32_t list = piece_list(PieceList::kWeights, p, [&] {
      std::vector<double> tensors;
      for (const ParamTensor& t : range_parameter_tensors(job_, p.range)) {
        tensors.push_back(t.elements * e);
      }
      return tensors;
    });
    until_step_end_.push_back(hold(f, list, 1, MemoryKind::kWeights));
  }
}

void Builder::on_chunk_forward_end(TaskId last, const ChunkPlan& c, size_t key) {
  const StageOutputs mode = job_.software.memory.stage_outputs;
  if (mode == StageOutputs::kDeallocated || p_ == 1) return;
  // The model's last chunk returns the loss, except to schedules that keep
  // every output for the caller (torch.distributed.pipelining: the logits).
  const bool model_end = c.info.has_head;
  if (model_end && mode != StageOutputs::kKeptUntilStepEnd) return;
  const size_t b =
      hold(last, model_end ? lists_.logits : lists_.stage_output, 1, MemoryKind::kActivations);
  if (mode == StageOutputs::kKeptUntilStepEnd) {
    until_step_end_.push_back(b);
  } else {
    stage_outputs_[key] = b;
  }
}

void Builder::on_backward(TaskId b, const ChunkPlan& c, const Piece& p, bool weight_grads) {
  if (p.layers() > 0) hold(b, lists_.backward_working, 1, MemoryKind::kTemporaries);
  if (p.head) {
    const size_t loss = hold(b, lists_.loss_backward, 1, MemoryKind::kTemporaries);
    if (loss != kNoBuffer) s_.buffers[loss].first_in_task = true;
  }
  if (weight_grads) on_weight_grads(b, c, p);
}

void Builder::on_weight_grads(TaskId task, const ChunkPlan& c, const Piece& p) {
  if (job_.software.memory.weight_grads == WeightGrads::kAutogradThenCopy) {
    // One layer's at a time (the framework takes them layer by layer), and
    // the embedding's or head's.
    const double e = weight_element_bytes(job_);
    const uint32_t list = piece_list(PieceList::kAutogradGrads, p, [&] {
      std::vector<double> tensors;
      for (const ParamTensor& t : range_parameter_tensors(job_, one_layer_range(job_, p.range))) {
        tensors.push_back(t.elements * e);
      }
      return tensors;
    });
    hold(task, list, 1, MemoryKind::kTemporaries);
  }
  // Gradients accumulated across the step's micro-batches, when the
  // framework allocates them in the backward and reduces them once: the
  // unsharded accumulators (FSDP under PP: to_accumulated_grad_if_needed).
  // Reduce-scattered every micro-batch, each piece's shard comes with its
  // first reduce-scatter instead (on_reduce_scatter).
  const auto ci = static_cast<size_t>(c.info.virtual_index);
  if (job_.software.memory.grad_buffers != GradBuffers::kPerStep || per_mb_sync_ ||
      chunk_grads_held_[ci]) {
    return;
  }
  chunk_grads_held_[ci] = true;
  const uint32_t list = piece_list(PieceList::kAccumulatedGrads, c.whole, [&] {
    std::vector<double> tensors;
    for (const ParamTensor& t : range_parameter_tensors(job_, c.whole.range)) {
      tensors.push_back(t.elements * grad_element_bytes(job_));
    }
    return tensors;
  });
  // An all-reduce leaves the reduced gradients in the accumulator.
  chunk_grads_[ci] = hold(task, list, 1, MemoryKind::kGrads,
                          zero_ == 0 ? Lifetime::kUntilNextStep : Lifetime::kStep);
}

void Builder::on_reduce_scatter(TaskId rs, const Piece& p, int32_t chunk, bool expert,
                                size_t reduced) {
  // Autograd's gradients become the reduce-scatter input only once the
  // piece's backward is done (FSDP's post-backward copy-in): held while the
  // reduce-scatter runs rather than from the backward's start.
  if (reduced != kNoBuffer && job_.software.memory.weight_grads == WeightGrads::kAutogradThenCopy) {
    s_.buffers[reduced].alloc = rs;
  }
  if (!per_mb_sync_ || job_.software.memory.grad_buffers != GradBuffers::kPerStep) return;
  const auto key = std::make_tuple(chunk, p.layer_begin, p.embedding, p.head, expert);
  if (!reduced_shards_.insert(key).second) return;
  const uint32_t list =
      piece_list(expert ? PieceList::kExpertShards : PieceList::kStepGrads, p, [&] {
        std::vector<double> tensors;
        for (const ParamTensor& t : range_parameter_tensors(job_, p.range)) {
          if (t.expert == expert) tensors.push_back(tensor_state(job_, t.elements, t.expert).grads);
        }
        return tensors;
      });
  hold(rs, list, 1, MemoryKind::kGrads, Lifetime::kUntilNextStep);
}

void Builder::on_chunk_backward_end(TaskId last, size_t key) {
  release(stage_outputs_[key], last);
  stage_outputs_[key] = kNoBuffer;
}

void Builder::finish_rank_memory(TaskId first, TaskId optimizer, const Stage& st) {
  hold_standing(first, optimizer, st);
  if (p_ > 1 && job_.software.memory.receive_buffers == ReceiveBuffers::kPerMicroBatch) {
    // A receive buffer per micro-batch for what each chunk gets from the
    // stage before (activations) and after (gradients), made in the first
    // step and kept.
    const int64_t chunks_total = model_chunk_count(job_);
    for (const ChunkPlan& c : st.chunks) {
      const int64_t links =
          (c.info.model_chunk > 0 ? 1 : 0) + (c.info.model_chunk < chunks_total - 1 ? 1 : 0);
      hold(first, lists_.stage_output, links * m_, MemoryKind::kActivations,
           Lifetime::kFromFirstStep);
    }
  }
  release(until_step_end_, optimizer);
  until_step_end_.clear();
  for (const ChunkPlan& c : st.chunks) {
    const auto ci = static_cast<size_t>(c.info.virtual_index);
    const size_t accumulator = chunk_grads_[ci];
    if (accumulator == kNoBuffer || s_.buffers[accumulator].lifetime != Lifetime::kStep) continue;
    // Unsharded until its last reduce-scatter; its shard from then on.
    const TaskId reduced = last_grad_sync_[ci] != kNoTask ? last_grad_sync_[ci] : optimizer;
    release(accumulator, reduced);
    const uint32_t list = piece_list(PieceList::kStepGrads, c.whole, [&] {
      std::vector<double> tensors;
      for (const ParamTensor& t : range_parameter_tensors(job_, c.whole.range)) {
        tensors.push_back(t.elements * grad_element_bytes(job_) / d(t.expert ? edp_ : shard_));
      }
      return tensors;
    });
    hold(reduced, list, 1, MemoryKind::kGrads, Lifetime::kUntilNextStep);
  }
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
  if (p.mtp > 0) give_back(kept[layers + 2]);
}

void Builder::hold_for_weight_pass(TaskId b, const ChunkPlan& c, const Piece& p, size_t key) {
  std::vector<KeptLayer>& kept = kept_[key];
  int64_t l = p.layer_begin;
  for (const LayerRun& run : p.range.runs) {
    const KindLists& lists = kind_lists(run.kind);
    for (int64_t i = 0; i < run.count; ++i, ++l) {
      KeptLayer& k = kept[static_cast<size_t>(l - c.info.layer_begin)];
      if (inputs_recomputed() || run.kind.full_recompute) {
        k.weight_inputs = hold(b, lists.weight_inputs, 1, MemoryKind::kActivations);
      }
      k.output_grads = hold(b, lists.output_grads, 1, MemoryKind::kActivations);
    }
  }
}

std::array<size_t, 2> Builder::hold_micro_batch_grads(TaskId producer, const Piece& p) {
  std::array<size_t, 2> out{kNoBuffer, kNoBuffer};
  if (!per_mb_sync_) return out;
  auto grads = [&](bool expert) {
    std::vector<double> tensors;
    for (const ParamTensor& t : range_parameter_tensors(job_, p.range)) {
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
    for (const ParamTensor& t : range_parameter_tensors(job_, c.whole.range)) {
      const TensorState s = tensor_state(job_, t.elements, t.expert);
      weights.push_back(s.weights);
      grads.push_back(s.grads);
      master.push_back(s.master);
      moments.push_back(s.moments);
    }
  }
  hold(first, weights, 1, MemoryKind::kWeights, Lifetime::kPersistent);
  if (job_.software.memory.grad_buffers == GradBuffers::kPersistent) {
    hold(first, grads, 1, MemoryKind::kGrads, Lifetime::kPersistent);
  }
  hold(first, master, 1, MemoryKind::kOptimizer, Lifetime::kPersistent);
  // PyTorch optimizers (torch.optim, apex and Transformer Engine FusedAdam)
  // create their moments on their first step.
  hold(optimizer, moments, 1, MemoryKind::kOptimizer, Lifetime::kFromFirstStep);
}

}  // namespace podsim::strategies::schedule_detail
