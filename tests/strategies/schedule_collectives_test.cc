// The data-parallel collectives a schedule issues: gradient buckets
// overlapping the last backward or reduced after it as each framework does,
// ZeRO-3 / FSDP parameter gathers per unit and micro-batch, one collective
// stream per group, reductions under pipelining, and the bytes they move.
#include <gtest/gtest.h>

#include <set>
#include <utility>
#include <vector>

#include "strategies/model_counts.h"
#include "strategies/schedule.h"
#include "tests/strategies/evaluator.h"
#include "tests/strategies/test_util.h"

namespace podsim::strategies {
namespace {

using testing::built_schedule;
using testing::makespan_with_unit_comms;
using testing::preset_job;

TEST(ScheduleCounts, DataParallelBucketsOverlapTheLastBackward) {
  // 8 layers of ~218M parameters on one stage, 500M-parameter buckets:
  // head (525M) alone, then layers in threes -> buckets {head}, {7,6,5},
  // {4,3,2}, {1,0,+embedding}. The last micro-batch's backward is split
  // into those four pieces, each followed by its all-reduce.
  Job job = preset_job("llama3-8b", 2048, 8);
  job.model.layers = 8;
  job.plan.dp = 4;
  job.options.dp_bucket_params = 500'000'000;
  const Schedule s = built_schedule(job, Scope::kRepresentatives);
  int backward = 0, sync = 0;
  double synced = 0;
  std::vector<std::pair<int32_t, int32_t>> ranges;
  for (const Task& t : s.rank_tasks(0)) {
    if (t.kind == TaskKind::kBackward) ++backward;
    if (t.purpose == CommPurpose::kGradSync) {
      ++sync;
      synced += t.bytes;
      EXPECT_EQ(t.collective, CollectiveKind::kAllReduce);
      EXPECT_EQ(s.groups[static_cast<size_t>(t.group)].ranks.size(), 4u);
      ranges.emplace_back(t.layer_begin, t.layer_end);
    }
  }
  EXPECT_EQ(backward, 2 + 4 - 1);  // 2 micro-batches per replica, the last in 4 pieces
  EXPECT_EQ(sync, 4);
  EXPECT_EQ(ranges, (std::vector<std::pair<int32_t, int32_t>>{{8, 8}, {5, 8}, {2, 5}, {0, 2}}));
  EXPECT_DOUBLE_EQ(synced, stage_parameters(job, 0).total() * 4);  // fp32 gradients
}

TEST(ScheduleCounts, AFrameworkThatReducesAfterTheBackwardDoesSoWhateverTheScenarioAllows) {
  // The job of DataParallelBucketsOverlapTheLastBackward under Megatron-LM
  // 2021's DDP (data_parallel.grad_reduce after_backward): the last
  // micro-batch's backward stays whole and the four bucket all-reduces
  // follow it, as with options.overlap.dp false.
  Job job = preset_job("llama3-8b", 2048, 8);
  job.model.layers = 8;
  job.plan.dp = 4;
  job.options.dp_bucket_params = 500'000'000;
  job.software.data_parallel.grad_reduce = GradReduce::kAfterBackward;
  auto counts = [](const Schedule& s) {
    int backward = 0, sync = 0;
    TaskId last_backward = 0;
    std::vector<TaskId> syncs;
    const auto tasks = s.rank_tasks(0);
    for (size_t i = 0; i < tasks.size(); ++i) {
      if (tasks[i].kind == TaskKind::kBackward) {
        ++backward;
        last_backward = static_cast<TaskId>(i);
      }
      if (tasks[i].purpose == CommPurpose::kGradSync) {
        ++sync;
        syncs.push_back(static_cast<TaskId>(i));
      }
    }
    // Every reduction comes after the last backward.
    for (TaskId t : syncs) EXPECT_GT(t, last_backward);
    return std::make_pair(backward, sync);
  };
  EXPECT_EQ(counts(built_schedule(job, Scope::kRepresentatives)), std::make_pair(2, 4));
  job.options.overlap_dp = false;
  job.software.data_parallel.grad_reduce = GradReduce::kOverlapped;
  EXPECT_EQ(counts(built_schedule(job, Scope::kRepresentatives)), std::make_pair(2, 4));
}

TEST(ScheduleCounts, ZeroOneGathersInTheForwardOnlyWhereTheSoftwarePrefetches) {
  // Megatron's overlap_param_gather runs the updated parameters' all-gathers
  // at the next step's start, beside its forward; a framework that does not
  // prefetch (data_parallel.forward_prefetch false) gathers after its
  // optimizer step.
  Job job = preset_job("llama3-8b", 2048, 16);
  job.model.layers = 4;
  job.plan.dp = 8;
  job.plan.zero = 1;
  auto placement = [](const Schedule& s) {
    TaskId optimizer = -1;
    std::vector<TaskId> gathers;
    for (TaskId id = s.rank_begin[0]; id < s.rank_begin[1]; ++id) {
      if (s.tasks[id].kind == TaskKind::kOptimizer) optimizer = id;
      if (s.tasks[id].purpose == CommPurpose::kParamGather) gathers.push_back(id);
    }
    EXPECT_GE(optimizer, 0);
    EXPECT_FALSE(gathers.empty());
    bool all_before = true, all_after = true;
    for (const TaskId g : gathers) (g < optimizer ? all_after : all_before) = false;
    return std::make_pair(all_before, all_after);
  };
  EXPECT_EQ(placement(built_schedule(job, Scope::kRepresentatives)), std::make_pair(true, false));
  job.software.data_parallel.forward_prefetch = false;
  EXPECT_EQ(placement(built_schedule(job, Scope::kRepresentatives)), std::make_pair(false, true));
}

TEST(ScheduleCounts, ZeroThreeGathersEveryUnitTwicePerMicroBatch) {
  Job job = preset_job("llama3-8b", 2048, 16);
  job.model.layers = 4;
  job.plan.dp = 8;
  job.plan.zero = 3;
  const Schedule s = built_schedule(job, Scope::kRepresentatives);
  const std::vector<TaskMemory> memory = task_memory(s);
  const int64_t m = micro_batches(job);  // 2
  int gathers = 0, reduces = 0;
  for (TaskId id = s.rank_begin[0]; id < s.rank_begin[1]; ++id) {
    const Task& t = s.tasks[id];
    gathers += t.purpose == CommPurpose::kParamGather;
    reduces += t.purpose == CommPurpose::kGradSync;
    if (t.purpose == CommPurpose::kParamGather) {
      EXPECT_EQ(t.collective, CollectiveKind::kAllGather);
      EXPECT_NEAR(memory[id].alloc, t.bytes * 7.0 / 8.0, 1e-6);
    }
  }
  EXPECT_EQ(gathers, 2 * 4 * m);  // before forward and backward of each unit
  EXPECT_EQ(reduces, 4 * m);      // reduce-scatter after each unit's backward
}

TEST(ScheduleCounts, ZeroThreeGathersAsTheFrameworkSchedulesThem) {
  Job job = preset_job("llama3-8b", 2048, 8);
  job.model.layers = 4;
  job.plan.dp = 8;
  job.plan.zero = 3;
  job.plan.recompute.mode = RecomputeMode::kFull;
  // Each unit's gather takes as long as its forward.
  auto step = [](const Schedule& s) {
    return makespan_with_unit_comms(s, 1, {CommPurpose::kParamGather});
  };
  auto gathers = [](const Schedule& s) {
    int n = 0;
    for (const Task& t : s.rank_tasks(0)) n += t.purpose == CommPurpose::kParamGather;
    return n;
  };
  // FSDP: prefetched one unit ahead (the backward's first under the last
  // forward), the recompute and the backward share one gather: only the
  // step's first gather is exposed.
  const Schedule fsdp = built_schedule(job, Scope::kRepresentatives);
  EXPECT_EQ(gathers(fsdp), 2 * 4);
  EXPECT_DOUBLE_EQ(step(fsdp), 1 + 4 * 1 + 4 * (1 + 2));
  // DeepSpeed ZeRO-3 (2021): no prefetch, and the backward gathers again
  // what the recompute released: every gather is exposed.
  DataParallelPolicy& dp = job.software.data_parallel;
  dp.forward_prefetch = false;
  dp.backward_prefetch = BackwardPrefetch::kNone;
  dp.regather_for_recompute = true;
  const Schedule deepspeed = built_schedule(job, Scope::kRepresentatives);
  EXPECT_EQ(gathers(deepspeed), 3 * 4);
  EXPECT_DOUBLE_EQ(step(deepspeed), 4 * (1 + 1) + 4 * (1 + 1 + 1 + 2));
}

// DeepSpeed's 2021 ZeRO-3 gathers and reduce-scatters a layer parameter by
// parameter: each of its collectives stands for one NCCL call per weight
// matrix above the persistence threshold (GPT-3's four; its biases and
// LayerNorms stay whole), FSDP's for one call per unit.
TEST(ScheduleCounts, PerParameterCollectivesCountTheirCalls) {
  Job job = preset_job("gpt3-175b", 2048, 64, 1);
  job.model.layers = 4;
  job.plan.dp = 64;
  job.plan.zero = 3;
  auto calls = [](const Schedule& s) {
    std::set<int> seen;
    for (const Task& t : s.rank_tasks(0)) {
      if (t.purpose == CommPurpose::kParamGather || t.purpose == CommPurpose::kGradSync) {
        if (t.layer_end - t.layer_begin == 1 && !t.embedding && !t.head) seen.insert(t.calls);
      }
    }
    return seen;
  };
  EXPECT_EQ(calls(built_schedule(job, Scope::kRepresentatives)), std::set<int>{1});
  DataParallelPolicy& dp = job.software.data_parallel;
  dp.param_gather = ParamGather::kParameter;
  dp.persist_below_params = 100'000;
  EXPECT_EQ(calls(built_schedule(job, Scope::kRepresentatives)), std::set<int>{4});
  dp.persist_below_params = 1'000'000'000;  // nothing partitioned: still one call
  EXPECT_EQ(calls(built_schedule(job, Scope::kRepresentatives)), std::set<int>{1});
}

TEST(ScheduleCounts, GathersAndReductionsOfOneGroupShareItsCollectiveStream) {
  // FSDP2 over 8 ranks, 4 units, no recompute; forward 1, backward 2, each
  // gather and each reduce-scatter 1. One NCCL stream per process group
  // runs both in issue order, and the pre-backward hook of a unit issues
  // the next unit's gather before the unit's reduce-scatter: B3 5-7 (its
  // gather under the last forward), G2 5-6, R3 7-8, G1 8-9, B2 7-9, R2
  // 9-10, G0 10-11, B1 9-11, R1 11-12, B0 11-13, R0 13-14.
  Job job = preset_job("llama3-8b", 2048, 8);
  job.model.layers = 4;
  job.plan.dp = 8;
  job.plan.zero = 3;
  auto step = [](const Schedule& s) {
    return makespan_with_unit_comms(s, 0, {CommPurpose::kParamGather, CommPurpose::kGradSync});
  };
  auto gather_streams = [](const Schedule& s) {
    std::set<Stream> streams;
    for (const Task& t : s.rank_tasks(0)) {
      if (t.purpose == CommPurpose::kParamGather) streams.insert(t.stream);
    }
    return streams;
  };
  DataParallelPolicy& dp = job.software.data_parallel;
  ASSERT_TRUE(dp.shared_collective_stream);
  const Schedule shared = built_schedule(job, Scope::kRepresentatives);
  EXPECT_EQ(gather_streams(shared), std::set<Stream>{Stream::kDpReduce});
  EXPECT_DOUBLE_EQ(step(shared), 1 + 4 * 1 + 4 * 2 + 1);
  // Apart, the gathers run on their own stream: the same step here, where
  // nothing waits behind a reduce-scatter.
  dp.shared_collective_stream = false;
  const Schedule apart = built_schedule(job, Scope::kRepresentatives);
  EXPECT_EQ(gather_streams(apart), std::set<Stream>{Stream::kDpGather});
  EXPECT_DOUBLE_EQ(step(apart), step(shared));
  // FSDP1's BACKWARD_POST gathers a unit once the unit before it is done,
  // and on the shared stream behind that unit's reduce-scatter: G3 5-6, B3
  // 6-8, R3 8-9, G2 9-10, B2 10-12, R2 12-13, G1 13-14, B1 14-16, R1 16-17,
  // G0 17-18, B0 18-20, R0 20-21.
  dp.shared_collective_stream = true;
  dp.backward_prefetch = BackwardPrefetch::kPost;
  EXPECT_DOUBLE_EQ(step(built_schedule(job, Scope::kRepresentatives)), 21);
}

TEST(ScheduleCounts, PipeliningWithFsdpReducesEachStageAfterItsLastBackward) {
  // Two stages of two layers, two micro-batches, 1F1B, ZeRO-1 with one
  // bucket per stage; forward 1 and backward 2 per layer, each gradient
  // reduction 1. Reduced during the last backward (Megatron), stage 1's
  // reduction hides behind stage 0's last backward: F 0-2 | 2-4 on stage 0,
  // stage 1 F0 2-4 B0 4-8 F1 8-10 B1 10-14 (+ its reduction 14-15), stage 0
  // B0 8-12 B1 14-18, reduction 18-19.
  Job job = preset_job("llama3-8b", 2048, 4);
  job.model.layers = 4;
  job.plan.pp = 2;
  job.plan.dp = 2;
  job.plan.zero = 1;
  job.plan.schedule = PipelineSchedule::kOneFOneB;
  job.options.dp_bucket_params = 100'000'000'000;  // one bucket per stage
  auto step = [](const Schedule& s) {
    return makespan_with_unit_comms(s, 0, {CommPurpose::kGradSync});
  };
  const double in_backward = step(built_schedule(job, Scope::kRepresentatives));
  EXPECT_DOUBLE_EQ(in_backward, 19);
  // torch.distributed.pipelining with FSDP: stage 1 reduces after its last
  // backward and sends its input gradient only then, so stage 0's last
  // backward starts one reduction later.
  job.software.pipeline_grad_sync = PipelineGradSync::kAfterLastBackward;
  EXPECT_DOUBLE_EQ(step(built_schedule(job, Scope::kRepresentatives)), in_backward + 1);
  // Without pipeline parallelism there is nothing to hold back.
  Job flat = job;
  flat.plan.pp = 1;
  flat.plan.dp = 4;
  Job flat_megatron = flat;
  flat_megatron.software.pipeline_grad_sync = PipelineGradSync::kInLastBackward;
  EXPECT_DOUBLE_EQ(step(built_schedule(flat, Scope::kRepresentatives)),
                   step(built_schedule(flat_megatron, Scope::kRepresentatives)));
}

TEST(ScheduleCounts, ParamsGatherAndReduceBytesMatchParameters) {
  // ZeRO-1: reduce-scatter every gradient once and all-gather every
  // parameter once per step, HSDP adds a replica all-reduce of the shard.
  Job job = preset_job("llama3-8b", 2048, 16);
  job.model.layers = 4;
  job.plan.dp = 8;
  job.plan.zero = 1;
  job.plan.shard_group = 4;
  const Schedule s = built_schedule(job, Scope::kRepresentatives);
  double rs = 0, ar = 0, ag = 0;
  for (const Task& t : s.rank_tasks(0)) {
    if (t.purpose == CommPurpose::kGradSync) rs += t.bytes;
    if (t.purpose == CommPurpose::kGradReplicaSync) ar += t.bytes;
    if (t.purpose == CommPurpose::kParamGather) ag += t.bytes;
  }
  const double params = stage_parameters(job, 0).total();
  EXPECT_DOUBLE_EQ(rs, params * 4);
  EXPECT_DOUBLE_EQ(ar, params * 4 / 4);
  EXPECT_DOUBLE_EQ(ag, params * 2);
  // With overlap the gathers open the step and the first forward runs in
  // bucket pieces, each waiting for the gather of its own layers.
  int pieces = 0;
  for (uint32_t id = s.rank_begin[0]; id < s.rank_begin[1]; ++id) {
    const Task& t = s.tasks[id];
    if (t.kind != TaskKind::kForward || t.micro_batch != 0) continue;
    ++pieces;
    bool waits = false;
    for (TaskId before : s.dependencies(id)) {
      const Task& g = s.tasks[before];
      waits |= g.purpose == CommPurpose::kParamGather && g.layer_begin == t.layer_begin &&
               g.layer_end == t.layer_end;
    }
    EXPECT_TRUE(waits) << s.task_name(id);
  }
  EXPECT_GT(pieces, 1);
}

}  // namespace
}  // namespace podsim::strategies
