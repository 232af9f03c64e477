#include "strategies/schedule.h"

#include <algorithm>
#include <string>

#include "strategies/schedule_builder.h"

namespace podsim::strategies {

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

BuildResult build_schedule(const Job& job, Scope scope) {
  BuildResult result;
  result.problems = validate(job);
  if (!result.problems.empty()) return result;
  result.schedule = schedule_detail::Builder(job, scope).build();
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
