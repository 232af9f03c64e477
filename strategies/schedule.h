#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "sim/bulk_allocator.h"
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

/// One task of a rank's schedule: 64 bytes, since an every-rank schedule
/// holds millions. Ranks fit 32 bits: every simulated rank has tasks and a
/// schedule holds at most kMaxScheduleTasks.
struct Task {
  int32_t rank = 0;
  int32_t stage = 0;
  int32_t chunk = 0;         ///< virtual stage on this rank (0..v-1); -1 for step-level tasks
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
  /// Collectives: the back-to-back NCCL calls of bytes / calls each it
  /// stands for (DeepSpeed's 2021 ZeRO-3 gathers and reduces parameter by
  /// parameter), 1 .. kMaxCommCalls.
  uint8_t calls = 1;
  int32_t group = -1;  ///< index into Schedule::groups; -1 for send/recv
  int32_t peer = -1;   ///< send/recv: the receiving rank
  /// Collectives: its sequence number among this rank's tasks on `group`.
  uint32_t group_seq = 0;
  double bytes = 0;  ///< nccl-tests size per rank (see CollectiveShape)

  uint32_t dep_begin = 0;  ///< into Schedule::deps
  uint32_t dep_count = 0;

  /// The same collective on every member rank has the same instance id:
  /// (group << 32) | group_seq. -1 for send/recv.
  int64_t instance() const {
    return group < 0 ? -1 : static_cast<int64_t>((static_cast<uint64_t>(group) << 32) | group_seq);
  }
};
static_assert(sizeof(Task) == 64);
inline constexpr int64_t kMaxCommCalls = 255;

/// The tasks of a schedule, by id. The ranks of a pipeline stage run the same
/// task list, each with its own rank, peers, groups and dependencies, so an
/// every-rank schedule keeps whole the tasks of one rank per stage (the
/// pattern) and, of another rank's task, only its group or peer: 4 bytes
/// instead of 64 (every rank of GPT-3 on 1,024 GPUs: 528,000 tasks, 2 MB
/// instead of 34). Its dependencies sit where its pattern's do, from the
/// rank's own first one. A rank that differs otherwise stays whole. Tasks are
/// read by value.
class TaskList {
 public:
  class Range;
  class Iterator {
   public:
    using value_type = Task;
    using difference_type = std::ptrdiff_t;
    Iterator() = default;
    Task operator*() const { return list_->at(segment_, id_); }
    Iterator& operator++();
    Iterator operator++(int) {
      Iterator before = *this;
      ++*this;
      return before;
    }
    bool operator==(const Iterator& other) const { return id_ == other.id_; }

   private:
    friend class TaskList;
    Iterator(const TaskList* list, TaskId id);
    const TaskList* list_ = nullptr;
    TaskId id_ = 0;
    size_t segment_ = 0;
  };

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  Task operator[](TaskId id) const { return in_id_order_ ? whole_[id] : at(segment_of(id), id); }
  Iterator begin() const { return Iterator(this, 0); }
  Iterator end() const { return Iterator(this, static_cast<TaskId>(size_)); }
  /// Tasks [first, last).
  Range range(TaskId first, TaskId last) const;

  /// Appends a whole task; its id is the size before.
  void push_back(const Task& task);
  void reserve(size_t whole, size_t shared);
  /// Keeps tasks [first, size()) as their links (groups or peers) to the
  /// tasks from `pattern` on, kept whole, if they run them with only their
  /// own rank, peers and groups. Returns whether it did.
  bool share_pattern(TaskId first, TaskId pattern);
  /// Sets a task's dependencies (Task::dep_begin, dep_count), in id order: a
  /// shared task whose dependencies do not sit where its pattern's do makes
  /// its rank whole again.
  void set_dependencies(TaskId id, uint32_t begin, uint32_t count);

 private:
  /// Consecutive ids kept the same way: whole from `whole_begin`, or shared
  /// (their links from `link_begin`) with the pattern's tasks from
  /// `whole_begin`, their dependencies from `dep_base`.
  struct Segment {
    TaskId first = 0;
    uint32_t whole_begin = 0;
    uint32_t link_begin = kWhole;
    int32_t rank = 0;
    uint32_t dep_base = 0;
    static constexpr uint32_t kWhole = UINT32_MAX;
  };
  size_t segment_of(TaskId id) const;
  Task at(size_t segment, TaskId id) const;
  size_t segment_end(size_t segment) const;
  void make_whole(size_t segment);

  sim::BulkVector<Task> whole_;
  sim::BulkVector<int32_t> links_;
  std::vector<Segment> segments_;
  size_t size_ = 0;
  bool in_id_order_ = true;  ///< whole_[id] is task id (nothing shared yet)
};

/// Tasks [first, last) of a TaskList: what Schedule::rank_tasks gives.
class TaskList::Range {
 public:
  Range(const TaskList& list, TaskId first, TaskId last)
      : list_(&list), first_(first), last_(last) {}
  Iterator begin() const { return Iterator(list_, first_); }
  Iterator end() const { return Iterator(list_, last_); }
  size_t size() const { return last_ - first_; }
  Task operator[](size_t i) const { return (*list_)[first_ + static_cast<TaskId>(i)]; }

 private:
  const TaskList* list_;
  TaskId first_, last_;
};

/// What a buffer holds, as the report breaks memory down.
enum class MemoryKind : uint8_t {
  kWeights,      ///< parameters in the format the kernels read (FSDP: the sharded masters too)
  kGrads,        ///< accumulated gradients (their shard, when reduce-scattered every micro-batch)
  kOptimizer,    ///< master weights and optimizer moments
  kActivations,  ///< what forward passes keep for their backward passes
  /// Recomputed activations, gathered weights, gradients waiting for their
  /// reduce-scatter, loss and communication buffers, library workspaces.
  kTemporaries,
};
inline constexpr int kMemoryKinds = 5;

/// How long a buffer lives.
enum class Lifetime : uint8_t {
  kStep,        ///< from its `alloc` task's start to its `free` task's end, every step
  kPersistent,  ///< allocated before the first step and kept (parameters, gradient buffers)
  /// Allocated when `alloc` starts in the first step, then kept: optimizer
  /// states, which PyTorch optimizers create on their first step.
  kFromFirstStep,
  /// From its `alloc` task's start to the start of the next step: gradients
  /// that optimizer.zero_grad(set_to_none=True) frees before the next step.
  kUntilNextStep,
};

/// Tensors allocated together and given back together: the unit the memory
/// replay (scenarios/step) feeds the caching-allocator model with.
struct Buffer {
  uint32_t tensors = 0;  ///< index into Schedule::tensor_lists
  uint32_t repeats = 1;  ///< the list, this many times over (one per layer)
  TaskId alloc = 0;      ///< a task of the rank that holds the buffer
  TaskId free = 0;       ///< kStep only: the task whose end gives it back
  MemoryKind kind = MemoryKind::kActivations;
  Lifetime lifetime = Lifetime::kStep;
  Stream pool = Stream::kCompute;  ///< the stream whose cached blocks serve it
  /// kStep with alloc == free: taken and given back as the task starts,
  /// before its other buffers are taken (the loss, which a head's backward
  /// computes before anything else).
  bool first_in_task = false;
};

enum class Scope : uint8_t {
  kEveryRank,  ///< every rank of the job
  /// One rank per stage, the ranks of one pipeline replica (the same tp, cp
  /// and dp on every stage: tp = cp = dp = 0 unless build_schedule is given
  /// another replica); groups still list all members.
  kRepresentatives,
};

/// A built schedule. Tasks of one rank are contiguous and in program order.
struct Schedule {
  Job job;
  Scope scope = Scope::kEveryRank;
  Layout layout;
  int64_t micro_batches = 0;
  std::vector<int64_t> ranks;        ///< simulated ranks, ascending
  std::vector<uint32_t> rank_begin;  ///< tasks of ranks[i]: [rank_begin[i], rank_begin[i+1])
  TaskList tasks;
  sim::BulkVector<TaskId> deps;  ///< dependency pool (see Task::dep_begin)
  std::vector<Work> works;
  std::vector<Group> groups;
  /// Bytes of each tensor of a list, in allocation order (shared by buffers).
  std::vector<std::vector<double>> tensor_lists;
  std::vector<double> tensor_list_bytes;  ///< the sum of each list
  /// The buffers of the ranks in `buffer_ranks`, in program order per rank.
  /// Every rank of a stage holds the same buffers at the same places of its
  /// task list, so one rank per stage carries them (an every-rank schedule of
  /// GPT-3 on 1,024 GPUs would otherwise hold 1.4 million of them).
  std::vector<Buffer> buffers;
  /// Per stage, the index into `ranks` of the rank whose buffers are kept:
  /// the stage's representative when it is simulated, else its first
  /// simulated rank.
  std::vector<uint32_t> buffer_ranks;

  std::span<const TaskId> dependencies(TaskId task) const { return dependencies(tasks[task]); }
  std::span<const TaskId> dependencies(const Task& task) const {
    return {deps.data() + task.dep_begin, task.dep_count};
  }
  TaskList::Range rank_tasks(size_t rank_index) const;
  /// Index of `rank` in `ranks`, or -1 when it is not simulated.
  int64_t rank_index(int64_t rank) const;
  /// "F mb3 c1 L12-24" style label for traces and deadlock reports.
  std::string task_name(TaskId task) const;
  /// Total bytes of a buffer.
  double bytes(const Buffer& buffer) const;
};

/// Bytes a task takes when it starts and gives back when it ends: the
/// per-step buffers (Lifetime::kStep) summed per task, the view of memory
/// the pipeline charts and the sweep's bounds use.
struct TaskMemory {
  double first = 0;  ///< taken and given back as the task starts, first (Buffer::first_in_task)
  double alloc = 0;
  double free = 0;
};
std::vector<TaskMemory> task_memory(const Schedule& schedule);
/// Bytes of the buffers of simulated rank `rank_index` (one of
/// Schedule::buffer_ranks) that outlive a step (persistent and first-step
/// ones), by MemoryKind.
std::array<double, kMemoryKinds> standing_memory(const Schedule& schedule, size_t rank_index);

/// The most tasks a schedule holds: every rank of the 16,384-GPU default
/// scenario is 2.5 million (about 1 GiB by the time the engine has run
/// them). A step needing more -- a million micro-batches, every rank of a
/// far larger job -- is refused with a problem.
inline constexpr size_t kMaxScheduleTasks = size_t{1} << 22;

/// The most micro-batches per pipeline a step simulates. Published runs use
/// tens (Llama 3 405B: 16); 65,536 is far past any, and keeps a sweep from
/// computing pipeline orders of millions of slots for each plan.
inline constexpr int64_t kMaxMicroBatches = int64_t{1} << 16;

/// Builds the schedule of `job`, or every problem that prevents it
/// (validate(job), or a schedule of more than `max_tasks` tasks). Under
/// Scope::kRepresentatives the simulated ranks are `replica_rank`'s pipeline
/// replica: its tp, cp and dp coordinates on every stage.
struct BuildResult {
  std::optional<Schedule> schedule;
  std::vector<PlanProblem> problems;
};
BuildResult build_schedule(const Job& job, Scope scope, size_t max_tasks = kMaxScheduleTasks,
                           int64_t replica_rank = 0);

/// The problem build_schedule reports, without building anything, when
/// `job` has more than kMaxMicroBatches micro-batches per pipeline, or its
/// micro-batches and chunks alone give the ranks in `scope` more than
/// `max_tasks` tasks (a forward and a backward each); nullopt if not.
std::optional<PlanProblem> schedule_size_problem(const Job& job, Scope scope,
                                                 size_t max_tasks = kMaxScheduleTasks);

std::string_view to_string(TaskKind kind);
std::string_view to_string(Stream stream);
std::string_view to_string(CommPurpose purpose);
std::string_view to_string(CollectiveKind kind);

}  // namespace podsim::strategies
