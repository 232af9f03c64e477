#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "strategies/job.h"
#include "strategies/layout.h"
#include "strategies/pipeline_order.h"
#include "strategies/workload.h"

namespace podsim::strategies {

// The training step as per-rank schedules.
//
// Every simulated rank has an ordered list of tasks. A task runs on one of
// the rank's streams (in-order queues, CUDA-stream semantics: a task starts
// after the previous task of its stream and after its dependencies). Compute
// tasks point to a shared Work (the op list they run, in-task TP/CP/EP
// collectives included); communication tasks name a group of ranks and a
// size. Dependencies may cross ranks (pipeline transfers).

enum class TaskKind : uint8_t {
  kForward,
  kBackward,         ///< input + weight gradients
  kBackwardInput,    ///< zero-bubble B
  kBackwardWeight,   ///< zero-bubble W
  kRecompute,        ///< forward again before a backward, per recompute mode
  kForwardBackward,  ///< DualPipe: a forward and another micro-batch's backward, overlapped
  kOptimizer,
  kComm,
};

/// Per-rank streams. Tasks use kCompute and the pp/dp streams; the tp, cp and
/// ep streams are for the lead's lowering of the collectives inside works.
enum class Stream : uint8_t {
  kCompute,
  kTp,
  kCp,
  kEp,
  kPpSendNext,  ///< activations to the next stage
  kPpSendPrev,  ///< gradients to the previous stage
  kDpGather,    ///< ZeRO/FSDP parameter all-gathers
  kDpReduce,    ///< gradient all-reduce / reduce-scatter, HSDP replica sync, tied embeddings
};
inline constexpr int kStreams = 8;

/// What a communication task moves.
enum class CommPurpose : uint8_t {
  kNone,
  kActivation,       ///< pipeline: activations, sent to `peer`
  kGradient,         ///< pipeline: activation gradients, sent to `peer`
  kGradSync,         ///< data parallel: gradient all-reduce / reduce-scatter of a bucket
  kGradReplicaSync,  ///< HSDP: all-reduce of the reduced shard across replicas
  kParamGather,      ///< ZeRO: parameter all-gather
  kEmbeddingSync,    ///< tied embeddings: gradient all-reduce of first and last stage
};

/// Ranks of a communicator; `ranks[i]` in ring order.
struct Group {
  GroupKind kind = GroupKind::kTp;
  std::vector<int64_t> ranks;
};

using TaskId = uint32_t;

struct Task {
  int64_t rank = 0;
  int32_t stage = 0;
  int32_t chunk = 0;         ///< virtual stage on this rank (0..v-1); -1 for step-level tasks
  int32_t model_chunk = 0;   ///< chunk * pp + stage; -1 for step-level tasks
  int32_t micro_batch = -1;  ///< -1 for step-level tasks
  int32_t layer_begin = 0;  ///< global layers [begin, end) the task covers (or whose data it moves)
  int32_t layer_end = 0;
  int32_t work = -1;  ///< index into Schedule::works (compute tasks)
  TaskKind kind = TaskKind::kComm;
  Stream stream = Stream::kCompute;
  bool embedding = false;  ///< covers the embedding
  bool head = false;       ///< covers the output layer and loss

  // Communication tasks.
  CommPurpose purpose = CommPurpose::kNone;
  CollectiveKind collective = CollectiveKind::kSendRecv;
  Dim dim = Dim::kDp;  ///< the dimension its time is reported under
  int32_t group = -1;  ///< index into Schedule::groups; -1 for send/recv
  int64_t peer = -1;   ///< send/recv: the receiving rank
  double bytes = 0;    ///< nccl-tests size per rank (see CollectiveShape)
  /// The same collective on every member rank has the same instance id:
  /// (group << 32) | (its sequence number among this rank's tasks on that
  /// group). -1 for send/recv.
  int64_t instance = -1;

  // Memory: `alloc_bytes` are taken when the task starts, `free_bytes` given
  // back when it ends (activations, recomputed activations, gathered ZeRO-3
  // weights, unreduced ZeRO-2/3 gradients).
  double alloc_bytes = 0;
  double free_bytes = 0;

  uint32_t dep_begin = 0;  ///< into Schedule::deps
  uint32_t dep_count = 0;
};

enum class Scope : uint8_t {
  kEveryRank,        ///< every rank of the job
  kRepresentatives,  ///< one rank per stage (tp = cp = dp = 0); groups still list all members
};

/// A built schedule. Tasks of one rank are contiguous and in program order.
struct Schedule {
  Job job;
  Scope scope = Scope::kEveryRank;
  Layout layout;
  int64_t micro_batches = 0;
  std::vector<int64_t> ranks;        ///< simulated ranks, ascending
  std::vector<uint32_t> rank_begin;  ///< tasks of ranks[i]: [rank_begin[i], rank_begin[i+1])
  std::vector<Task> tasks;
  std::vector<TaskId> deps;  ///< dependency pool (see Task::dep_begin)
  std::vector<Work> works;
  std::vector<Group> groups;

  std::span<const TaskId> dependencies(TaskId task) const;
  std::span<const Task> rank_tasks(size_t rank_index) const;
  /// Index of `rank` in `ranks`, or -1 when it is not simulated.
  int64_t rank_index(int64_t rank) const;
  /// "F mb3 c1 L12-24" style label for traces and deadlock reports.
  std::string task_name(TaskId task) const;
};

/// Builds the schedule of `job`, or every problem that prevents it.
struct BuildResult {
  std::optional<Schedule> schedule;
  std::vector<PlanProblem> problems;
};
BuildResult build_schedule(const Job& job, Scope scope);

std::string_view to_string(TaskKind kind);
std::string_view to_string(Stream stream);
std::string_view to_string(CommPurpose purpose);
std::string_view to_string(CollectiveKind kind);

}  // namespace podsim::strategies
