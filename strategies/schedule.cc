#include "strategies/schedule.h"

#include <algorithm>
#include <string>

#include "strategies/schedule_builder.h"

namespace podsim::strategies {

TaskList::Range Schedule::rank_tasks(size_t rank_index) const {
  return tasks.range(rank_begin[rank_index], rank_begin[rank_index + 1]);
}

int64_t Schedule::rank_index(int64_t rank) const {
  auto it = std::lower_bound(ranks.begin(), ranks.end(), rank);
  if (it == ranks.end() || *it != rank) return -1;
  return it - ranks.begin();
}

std::string Schedule::task_name(TaskId task) const {
  const Task& t = tasks[task];
  // Appended, not "r" + std::to_string(...): GCC 12 warns falsely
  // (-Wrestrict) on a literal + std::string&& here.
  std::string out = "r";
  out += std::to_string(t.rank);
  out += ' ';
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
    case TaskKind::kForwardBackward:
      out += "F&B";
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

double Schedule::bytes(const Buffer& buffer) const {
  return tensor_list_bytes[buffer.tensors] * static_cast<double>(buffer.repeats);
}

std::vector<TaskMemory> task_memory(const Schedule& schedule) {
  std::vector<TaskMemory> out(schedule.tasks.size());
  for (const Buffer& b : schedule.buffers) {
    if (b.lifetime != Lifetime::kStep) continue;
    const double bytes = schedule.bytes(b);
    if (b.first_in_task) {
      out[b.alloc].first += bytes;
      continue;
    }
    out[b.alloc].alloc += bytes;
    out[b.free].free += bytes;
  }
  return out;
}

std::array<double, kMemoryKinds> standing_memory(const Schedule& schedule, size_t rank_index) {
  std::array<double, kMemoryKinds> out{};
  const TaskId begin = schedule.rank_begin[rank_index], end = schedule.rank_begin[rank_index + 1];
  for (const Buffer& b : schedule.buffers) {
    if (b.lifetime == Lifetime::kStep || b.lifetime == Lifetime::kUntilNextStep) continue;
    if (b.alloc < begin || b.alloc >= end) continue;
    out[static_cast<size_t>(b.kind)] += schedule.bytes(b);
  }
  return out;
}

namespace {

/// The problem for a schedule of more than kMaxScheduleTasks tasks, at the
/// key that multiplies them most.
PlanProblem too_many_tasks(const Job& job, int64_t ranks, Scope scope, size_t max_tasks) {
  const int64_t m = micro_batches(job);
  const std::string size = "the step has more than " + std::to_string(max_tasks) +
                           " tasks to simulate (" + std::to_string(ranks) + " ranks x " +
                           std::to_string(m) + " micro-batches x " +
                           std::to_string(job.plan.virtual_stages) +
                           " model chunks per rank, each a forward and a backward over " +
                           "its layers, units and gradient buckets)";
  if (m > 4096) {
    return {"/training/global_batch", size,
            "a real step runs at most a few thousand micro-batches per pipeline: a smaller "
            "global_batch, or a larger micro_batch"};
  }
  if (scope == Scope::kEveryRank && ranks > job.plan.pp) {
    return {"/options/simulation", size,
            "simulate one rank per pipeline stage (\"symmetric\", the default)"};
  }
  return {"/model/layers", size,
          "fewer layers, or coarser ZeRO-3 units (/options/fsdp_unit_layers) and gradient "
          "buckets (/options/dp_bucket_params)"};
}

int64_t scheduled_ranks(const Job& job, Scope scope) {
  return scope == Scope::kEveryRank ? job.plan.dp * job.plan.tp * job.plan.pp * job.plan.cp
                                    : job.plan.pp;
}

}  // namespace

std::optional<PlanProblem> schedule_size_problem(const Job& job, Scope scope, size_t max_tasks) {
  // Every rank runs at least a forward and a backward task per micro-batch
  // and chunk: refuse before the pipeline orders take that much memory.
  const int64_t ranks = scheduled_ranks(job, scope);
  const int64_t m = micro_batches(job);
  if (m > kMaxMicroBatches) {
    return PlanProblem{"/training/global_batch",
                       "global_batch / (dp x micro_batch) = " + std::to_string(m) +
                           " micro-batches per pipeline, more than podsim simulates (" +
                           std::to_string(kMaxMicroBatches) + ")",
                       "a real step runs at most a few thousand: a smaller global_batch, or a "
                       "larger micro_batch"};
  }
  const double least_tasks = 2.0 * static_cast<double>(ranks) * static_cast<double>(m) *
                             static_cast<double>(job.plan.virtual_stages);
  if (least_tasks > static_cast<double>(max_tasks)) {
    return too_many_tasks(job, ranks, scope, max_tasks);
  }
  return std::nullopt;
}

BuildResult build_schedule(const Job& job, Scope scope, size_t max_tasks, int64_t replica_rank) {
  BuildResult result;
  result.problems = validate(job);
  if (!result.problems.empty()) return result;
  if (std::optional<PlanProblem> too_large = schedule_size_problem(job, scope, max_tasks)) {
    result.problems.push_back(std::move(*too_large));
    return result;
  }
  try {
    result.schedule = schedule_detail::Builder(job, scope, max_tasks, replica_rank).build();
  } catch (const schedule_detail::TooManyTasks&) {
    result.problems.push_back(too_many_tasks(job, scheduled_ranks(job, scope), scope, max_tasks));
  }
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
    case TaskKind::kForwardBackward:
      return "forward_backward";
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
