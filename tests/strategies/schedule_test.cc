#include "strategies/schedule.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "strategies/memory.h"
#include "strategies/model_counts.h"
#include "tests/strategies/evaluator.h"
#include "tests/strategies/test_util.h"

namespace podsim::strategies {
namespace {

using testing::built_schedule;
using testing::compute_busy;
using testing::evaluate;
using testing::layer_costs;
using testing::makespan_with_unit_comms;
using testing::peak_in_order;
using testing::preset_job;

/// A pipeline-only job: `layers` layers, pp stages, m micro-batches.
Job pipeline_job(PipelineSchedule schedule, int64_t pp, int64_t m, int64_t layers, int64_t v = 1) {
  Job job = preset_job("llama3-8b", 1024, m);
  job.model.layers = layers;
  job.plan.pp = pp;
  job.plan.schedule = schedule;
  job.plan.virtual_stages = v;
  return job;
}

/// Idle fraction of each stage's compute stream over the step.
std::vector<double> bubble_fractions(const Schedule& s,
                                     const std::function<double(const Task&)>& cost) {
  const testing::Timeline tl = evaluate(s, cost);
  EXPECT_EQ(tl.done, s.tasks.size());
  std::vector<double> out;
  for (size_t ri = 0; ri < s.ranks.size(); ++ri) {
    out.push_back(1.0 - compute_busy(s, ri, cost) / tl.makespan);
  }
  return out;
}

TEST(PipelineBubble, GpipeAndOneFOneBAreP1OverMP1) {
  // Uniform stages (one layer each), F = 1, B = 2: the step is (m + p - 1)
  // (F + B) and every stage idles (p - 1)(F + B) of it.
  for (PipelineSchedule sched : {PipelineSchedule::kGpipe, PipelineSchedule::kOneFOneB}) {
    for (auto [p, m] : {std::pair<int64_t, int64_t>{4, 8}, {2, 3}, {8, 8}, {4, 1}}) {
      const Schedule s = built_schedule(pipeline_job(sched, p, m, p), Scope::kEveryRank);
      const double expected = static_cast<double>(p - 1) / static_cast<double>(m + p - 1);
      for (double b : bubble_fractions(s, layer_costs())) {
        EXPECT_NEAR(b, expected, 1e-12) << "p=" << p << " m=" << m;
      }
    }
  }
}

TEST(PipelineBubble, InterleavingDividesTheBubbleByV) {
  // Megatron's interleaved schedule: the bubble is (p-1)/v stage-passes, so
  // idle / ideal = (p - 1) / (v m).
  for (auto [p, v, m] :
       {std::tuple<int64_t, int64_t, int64_t>{4, 2, 8}, {4, 3, 4}, {2, 4, 6}, {8, 2, 16}}) {
    const Schedule s = built_schedule(
        pipeline_job(PipelineSchedule::kInterleavedOneFOneB, p, m, p * v, v), Scope::kEveryRank);
    const auto cost = layer_costs();
    const testing::Timeline tl = evaluate(s, cost);
    ASSERT_EQ(tl.done, s.tasks.size());
    for (size_t ri = 0; ri < s.ranks.size(); ++ri) {
      const double ideal = compute_busy(s, ri, cost);
      EXPECT_NEAR((tl.makespan - ideal) / ideal,
                  static_cast<double>(p - 1) / static_cast<double>(v * m), 1e-12)
          << "p=" << p << " v=" << v << " m=" << m;
    }
  }
}

TEST(PipelineBubble, ZeroBubbleH1BeatsOneFOneB) {
  // F = B = W = 1 (ZB-H1's setting): 1F1B with B+W fused idles 3(p-1) of
  // 3m + 3(p-1); ZB-H1 idles (p-1)(F + B - W) = p-1 (Qi et al. 2023).
  for (auto [p, m] : {std::pair<int64_t, int64_t>{4, 8}, {4, 12}, {8, 16}}) {
    const auto cost = layer_costs(1, 2);
    const Schedule zb =
        built_schedule(pipeline_job(PipelineSchedule::kZeroBubble, p, m, p), Scope::kEveryRank);
    const Schedule fb =
        built_schedule(pipeline_job(PipelineSchedule::kOneFOneB, p, m, p), Scope::kEveryRank);
    const testing::Timeline tz = evaluate(zb, cost);
    const testing::Timeline tf = evaluate(fb, cost);
    ASSERT_EQ(tz.done, zb.tasks.size());
    EXPECT_DOUBLE_EQ(tf.makespan, static_cast<double>(3 * m + 3 * (p - 1)));
    EXPECT_LT(tz.makespan, tf.makespan);
    EXPECT_DOUBLE_EQ(tz.makespan, static_cast<double>(3 * m + (p - 1))) << "p=" << p;
  }
}

TEST(PipelineMemory, OneFOneBKeepsPMicroBatchesGpipeM) {
  const int64_t p = 4, m = 8;
  for (PipelineSchedule sched :
       {PipelineSchedule::kOneFOneB, PipelineSchedule::kGpipe, PipelineSchedule::kZeroBubble}) {
    const Job job = pipeline_job(sched, p, m, 2 * p);
    const Schedule s = built_schedule(job, Scope::kEveryRank);
    for (size_t ri = 0; ri < s.ranks.size(); ++ri) {
      const int64_t stage = s.layout.stage(s.ranks[ri]);
      const ChunkInfo c = stage_chunks(job, stage).front();
      const double per_mb =
          stored_activation_bytes(job, c, c.layer_begin, c.layer_end, c.has_embedding, c.has_head);
      const double in_flight = peak_in_order(s, ri) / per_mb;
      if (sched == PipelineSchedule::kGpipe) {
        EXPECT_NEAR(in_flight, m, 1e-9);
      } else if (sched == PipelineSchedule::kOneFOneB) {
        EXPECT_NEAR(in_flight, static_cast<double>(p - stage), 1e-9) << "stage " << stage;
      } else {
        // ZB-H1 lets every stage hold p micro-batches (F done, W not done),
        // 1F1B's peak on stage 0; a micro-batch between B and W holds only
        // the GEMM inputs plus the output gradients W needs.
        int64_t open = 0, most = 0;
        for (const Task& t : s.rank_tasks(ri)) {
          open += t.kind == TaskKind::kForward;
          open -= t.kind == TaskKind::kBackwardWeight;
          most = std::max(most, open);
        }
        EXPECT_EQ(most, std::min(p, m)) << "stage " << stage;
        const LayerActivations a = layer_activations(job);
        const double grads = static_cast<double>(c.layers()) * a.output_grads;
        EXPECT_LE(peak_in_order(s, ri), static_cast<double>(p) * (per_mb + grads));
        EXPECT_GE(in_flight, static_cast<double>(p - stage));
      }
    }
  }
}

// Every rank of a stage holds its representative's buffers, so an
// every-rank schedule keeps only the representative's: the same buffers, at
// the same places of its task list, as the representatives' schedule has.
TEST(PipelineMemory, EveryRankScheduleKeepsTheRepresentativesBuffers) {
  Job job = pipeline_job(PipelineSchedule::kOneFOneB, 2, 4, 4);
  job.plan.dp = 2;
  job.plan.tp = 2;
  job.plan.zero = 1;
  const Schedule every = built_schedule(job, Scope::kEveryRank);
  const Schedule reps = built_schedule(job, Scope::kRepresentatives);
  ASSERT_EQ(every.ranks.size(), 8u);
  ASSERT_EQ(every.buffer_ranks.size(), 2u);
  size_t kept = 0;
  for (int64_t stage = 0; stage < 2; ++stage) {
    const size_t ri = every.buffer_ranks[static_cast<size_t>(stage)];
    const size_t rep = reps.buffer_ranks[static_cast<size_t>(stage)];
    EXPECT_EQ(every.ranks[ri], every.layout.representative(stage));
    EXPECT_EQ(reps.ranks[rep], every.ranks[ri]);
    auto of_rank = [](const Schedule& s, size_t r) {
      std::vector<Buffer> out;
      for (const Buffer& b : s.buffers) {
        if (b.alloc < s.rank_begin[r] || b.alloc >= s.rank_begin[r + 1]) continue;
        Buffer local = b;
        local.alloc -= s.rank_begin[r];
        local.free -= s.rank_begin[r];
        out.push_back(local);
      }
      return out;
    };
    const std::vector<Buffer> mine = of_rank(every, ri), theirs = of_rank(reps, rep);
    ASSERT_EQ(mine.size(), theirs.size()) << "stage " << stage;
    ASSERT_FALSE(mine.empty());
    for (size_t i = 0; i < mine.size(); ++i) {
      EXPECT_EQ(every.tensor_lists[mine[i].tensors], reps.tensor_lists[theirs[i].tensors]);
      EXPECT_EQ(mine[i].repeats, theirs[i].repeats);
      EXPECT_EQ(mine[i].alloc, theirs[i].alloc);
      EXPECT_EQ(mine[i].free, theirs[i].free);
      EXPECT_EQ(mine[i].kind, theirs[i].kind);
      EXPECT_EQ(mine[i].lifetime, theirs[i].lifetime);
    }
    kept += mine.size();
  }
  EXPECT_EQ(kept, every.buffers.size()) << "buffers of ranks other than the kept ones";
}

// Layer kinds in the tensor lists: a model of dense and MoE layers with an
// MTP module keeps, per micro-batch, what stored_activation_bytes() counts
// for its kinds (GPipe: every micro-batch's at once), and its standing
// weights and optimizer states are static_memory()'s, expert tensors
// sharded over the expert-data-parallel group.
TEST(PipelineMemory, MoeLayerKindsAndMtpKeepWhatTheirTensorsSay) {
  Job job = preset_job("deepseek-v3", 1024, 8);
  job.model.layers = 5;  // 3 dense, 2 MoE layers
  job.model.mtp_layers = 1;
  job.plan.dp = 4;
  job.plan.ep = 4;
  job.plan.zero = 1;
  job.plan.schedule = PipelineSchedule::kGpipe;
  job.plan.recompute = {RecomputeMode::kNone, 1};
  ASSERT_TRUE(validate(job).empty());
  const Schedule s = built_schedule(job, Scope::kRepresentatives);
  const ChunkInfo c = stage_chunks(job, 0).front();
  ASSERT_EQ(c.mtp, 1);
  const double per_mb = stored_activation_bytes(job, c, c.layer_begin, c.layer_end, c.has_embedding,
                                                c.has_head, c.mtp);
  const double dense_only = stored_activation_bytes(job, c, 0, 3, false, false);
  const double moe_only = stored_activation_bytes(job, c, 3, 5, false, false);
  EXPECT_NE(dense_only / 3, moe_only / 2);  // the two kinds keep different tensors
  const int64_t m = job.training.global_batch / (job.training.micro_batch * job.plan.dp);
  EXPECT_NEAR(peak_in_order(s, 0), static_cast<double>(m) * per_mb, 1e-6 * per_mb);
  double weights = 0, optimizer = 0;
  for (const Buffer& b : s.buffers) {
    if (b.lifetime == Lifetime::kStep || b.lifetime == Lifetime::kUntilNextStep) continue;
    if (b.kind == MemoryKind::kWeights) weights += s.bytes(b);
    if (b.kind == MemoryKind::kOptimizer) optimizer += s.bytes(b);
  }
  const StaticMemory st = static_memory(job, 0);
  EXPECT_NEAR(weights, st.weights, 1e-9 * st.weights);
  EXPECT_NEAR(optimizer, st.optimizer, 1e-9 * st.optimizer);
  EXPECT_GT(stage_parameters(job, 0).expert, 0);
}

// FSDP under pipeline parallelism (torchtitan; GradBuffers::kPerStep): no
// gradient buffer stands through the step. Each stage's first backward makes
// its unsharded accumulator, its last reduce-scatter gives it back, and the
// shard it leaves lives until the next step. Megatron's buffers stand.
TEST(PipelineMemory, FsdpGradientsAreMadeByTheBackwardAndShardedByTheReduceScatter) {
  Job job = pipeline_job(PipelineSchedule::kOneFOneB, 2, 4, 4);
  job.plan.dp = 4;
  job.plan.zero = 2;
  const auto grads = static_cast<size_t>(MemoryKind::kGrads);
  const Schedule standing = built_schedule(job, Scope::kEveryRank);
  job.software.memory.grad_buffers = GradBuffers::kPerStep;
  const Schedule per_step = built_schedule(job, Scope::kEveryRank);
  ASSERT_EQ(per_step.buffer_ranks, standing.buffer_ranks);
  for (const size_t ri : per_step.buffer_ranks) {
    const int64_t stage = per_step.layout.stage(per_step.ranks[ri]);
    const double stage_grads = static_memory(job, stage).params * grad_element_bytes(job);
    EXPECT_NEAR(standing_memory(standing, ri)[grads], stage_grads, 1e-6 * stage_grads);
    EXPECT_EQ(standing_memory(per_step, ri)[grads], 0.0);
    std::vector<const Buffer*> accumulators, shards;
    for (const Buffer& b : per_step.buffers) {
      if (b.kind != MemoryKind::kGrads || b.alloc < per_step.rank_begin[ri] ||
          b.alloc >= per_step.rank_begin[ri + 1]) {
        continue;
      }
      (b.lifetime == Lifetime::kStep ? accumulators : shards).push_back(&b);
    }
    ASSERT_EQ(accumulators.size(), 1u) << "stage " << stage;
    ASSERT_EQ(shards.size(), 1u) << "stage " << stage;
    const Buffer& acc = *accumulators.front();
    EXPECT_NEAR(per_step.bytes(acc), stage_grads, 1e-6 * stage_grads);
    EXPECT_EQ(per_step.tasks[acc.alloc].kind, TaskKind::kBackward);
    EXPECT_EQ(per_step.tasks[acc.free].kind, TaskKind::kComm);
    EXPECT_EQ(shards.front()->lifetime, Lifetime::kUntilNextStep);
    EXPECT_EQ(shards.front()->alloc, acc.free);
    EXPECT_NEAR(per_step.bytes(*shards.front()), stage_grads / 4, 1e-6 * stage_grads);
  }
}

/// Structural checks every schedule must pass.
void check_structure(const Schedule& s) {
  const testing::Timeline tl = evaluate(s, layer_costs(1, 2, 1));
  ASSERT_EQ(tl.done, s.tasks.size()) << "dependency cycle";
  // Every forward precedes its backward; every (micro-batch, layer) runs
  // forward once and backward once (B and W once each) on every rank.
  for (size_t ri = 0; ri < s.ranks.size(); ++ri) {
    std::map<std::pair<int32_t, int32_t>, double> forward_end;
    std::map<std::tuple<int, int32_t, int32_t>, int> visits;
    for (uint32_t id = s.rank_begin[ri]; id < s.rank_begin[ri + 1]; ++id) {
      const Task& t = s.tasks[id];
      if (t.stream != Stream::kCompute || t.micro_batch < 0) continue;
      for (int32_t l = t.layer_begin; l < t.layer_end; ++l) {
        ++visits[{static_cast<int>(t.kind), t.micro_batch, l}];
        if (t.kind == TaskKind::kForward) forward_end[{t.micro_batch, l}] = tl.finish[id];
        if (t.kind == TaskKind::kBackward || t.kind == TaskKind::kBackwardInput ||
            t.kind == TaskKind::kRecompute) {
          const auto f = forward_end.find({t.micro_batch, l});
          ASSERT_NE(f, forward_end.end());
          EXPECT_GE(tl.start[id], f->second);
        }
      }
    }
    const int64_t stage = s.layout.stage(s.ranks[ri]);
    const bool zb = s.job.plan.schedule == PipelineSchedule::kZeroBubble;
    const bool rc = s.job.plan.recompute.mode != RecomputeMode::kNone;
    for (const ChunkInfo& c : stage_chunks(s.job, stage)) {
      for (int32_t mb = 0; mb < s.micro_batches; ++mb) {
        for (auto l = static_cast<int32_t>(c.layer_begin); l < c.layer_end; ++l) {
          auto count = [&](TaskKind k) { return visits[{static_cast<int>(k), mb, l}]; };
          EXPECT_EQ(count(TaskKind::kForward), 1);
          EXPECT_EQ(count(TaskKind::kBackward), zb ? 0 : 1);
          EXPECT_EQ(count(TaskKind::kBackwardInput), zb ? 1 : 0);
          EXPECT_EQ(count(TaskKind::kBackwardWeight), zb ? 1 : 0);
          EXPECT_EQ(count(TaskKind::kRecompute), rc ? 1 : 0);
        }
      }
    }
  }
  // Pipeline transfers go to the next / previous stage, and every forward
  // of a later model chunk waits for one.
  for (TaskId id = 0; id < s.tasks.size(); ++id) {
    const Task& t = s.tasks[id];
    if (t.purpose == CommPurpose::kActivation || t.purpose == CommPurpose::kGradient) {
      const int64_t to = s.layout.stage(t.peer);
      const int64_t step = t.purpose == CommPurpose::kActivation ? 1 : -1;
      EXPECT_EQ(to, (t.stage + step + s.job.plan.pp) % s.job.plan.pp);
    }
    const int64_t model_chunk = t.chunk * s.job.plan.pp + t.stage;
    if (t.kind == TaskKind::kForward && model_chunk > 0 &&
        t.layer_begin == stage_chunks(s.job, t.stage)[static_cast<size_t>(t.chunk)].layer_begin) {
      bool waits = false;
      for (TaskId before : s.dependencies(id)) {
        waits |= s.tasks[before].purpose == CommPurpose::kActivation &&
                 s.tasks[before].micro_batch == t.micro_batch;
      }
      EXPECT_TRUE(waits) << s.task_name(id);
    }
  }
  // In an every-rank schedule each collective instance appears once on every
  // member of its group.
  if (s.scope == Scope::kEveryRank) {
    std::map<int64_t, std::set<int64_t>> members;
    std::map<int64_t, int32_t> group_of;
    for (const Task& t : s.tasks) {
      if (t.group < 0) continue;
      EXPECT_TRUE(members[t.instance()].insert(t.rank).second);
      group_of[t.instance()] = t.group;
    }
    for (const auto& [instance, ranks] : members) {
      const Group& g = s.groups[static_cast<size_t>(group_of[instance])];
      EXPECT_EQ(ranks, std::set<int64_t>(g.ranks.begin(), g.ranks.end()));
    }
  }
}

std::vector<Job> varied_jobs() {
  std::vector<Job> jobs;
  for (PipelineSchedule sched :
       {PipelineSchedule::kGpipe, PipelineSchedule::kOneFOneB,
        PipelineSchedule::kInterleavedOneFOneB, PipelineSchedule::kZeroBubble}) {
    for (int zero : {0, 1, 2, 3}) {
      for (bool overlap : {true, false}) {
        Job job = preset_job("llama3-8b", 2048, 16);
        job.model.layers = 8;
        job.plan.tp = 2;
        job.plan.dp = 2;
        job.plan.pp = 2;
        job.plan.cp = 2;
        job.plan.sequence_parallel = true;
        job.plan.schedule = sched;
        job.plan.virtual_stages = sched == PipelineSchedule::kInterleavedOneFOneB ? 2 : 1;
        job.plan.zero = zero;
        job.options.overlap_dp = overlap;
        job.options.overlap_pp = overlap;
        job.options.dp_bucket_params = 300'000'000;  // a few layers per bucket
        job.plan.recompute.mode = zero == 1 ? RecomputeMode::kFull : RecomputeMode::kNone;
        jobs.push_back(job);
      }
    }
  }
  Job hsdp = preset_job("llama3-8b", 2048, 16);
  hsdp.model.layers = 4;
  hsdp.plan.dp = 8;
  hsdp.plan.zero = 3;
  hsdp.plan.shard_group = 4;
  hsdp.plan.recompute.mode = RecomputeMode::kSelective;
  jobs.push_back(hsdp);
  Job moe = preset_job("mixtral-8x7b", 1024, 8);
  moe.model.layers = 4;
  moe.plan.dp = 4;
  moe.plan.ep = 2;
  moe.plan.pp = 2;
  moe.plan.zero = 1;
  moe.plan.recompute = {RecomputeMode::kEvery, 2};
  jobs.push_back(moe);
  Job gpt = preset_job("gpt3-175b", 2048, 8);
  gpt.model.layers = 6;
  gpt.plan.pp = 3;
  gpt.plan.dp = 2;
  gpt.options.flash_attention = false;
  jobs.push_back(gpt);  // tied embeddings across stages
  return jobs;
}

TEST(ScheduleStructure, AcyclicCompleteAndConsistent) {
  for (const Job& job : varied_jobs()) {
    SCOPED_TRACE(testing::describe(job));
    check_structure(built_schedule(job, Scope::kEveryRank));
    check_structure(built_schedule(job, Scope::kRepresentatives));
  }
}

/// A task with its dependencies expressed as (rank, position on that rank).
struct Portable {
  Task task;
  TaskMemory memory;
  std::vector<std::pair<int64_t, int64_t>> deps;
};
std::vector<Portable> portable(const Schedule& s, int64_t rank) {
  const auto ri = static_cast<size_t>(s.rank_index(rank));
  const std::vector<TaskMemory> memory = task_memory(s);
  std::vector<Portable> out;
  for (uint32_t id = s.rank_begin[ri]; id < s.rank_begin[ri + 1]; ++id) {
    Portable p{s.tasks[id], memory[id], {}};
    for (TaskId before : s.dependencies(id)) {
      const Task& b = s.tasks[before];
      const auto bi = static_cast<size_t>(s.rank_index(b.rank));
      p.deps.emplace_back(b.rank, static_cast<int64_t>(before - s.rank_begin[bi]));
    }
    out.push_back(std::move(p));
  }
  return out;
}

/// The same task in two schedules of one job: what it runs, on which
/// stream, with which peer or group, and after which tasks.
void expect_same_task(const Schedule& sa, const Portable& a, const Schedule& sb,
                      const Portable& b) {
  const Task &x = a.task, &y = b.task;
  EXPECT_EQ(x.kind, y.kind);
  EXPECT_EQ(x.stream, y.stream);
  EXPECT_EQ(x.micro_batch, y.micro_batch);
  EXPECT_EQ(x.peer, y.peer);
  EXPECT_EQ(x.bytes, y.bytes);
  EXPECT_EQ(x.group < 0, y.group < 0);
  if (x.group >= 0) {
    EXPECT_EQ(sa.groups[static_cast<size_t>(x.group)].ranks,
              sb.groups[static_cast<size_t>(y.group)].ranks);
  }
  EXPECT_EQ(a.deps, b.deps);
}

TEST(ScheduleStructure, RepresentativesMatchEveryRankSchedule) {
  for (const Job& job : varied_jobs()) {
    SCOPED_TRACE(testing::describe(job));
    const Schedule all = built_schedule(job, Scope::kEveryRank);
    const Schedule rep = built_schedule(job, Scope::kRepresentatives);
    ASSERT_EQ(rep.ranks.size(), static_cast<size_t>(job.plan.pp));
    for (int64_t rank : rep.ranks) {
      ASSERT_TRUE(all.layout.is_representative(rank));
      const std::vector<Portable> a = portable(all, rank), r = portable(rep, rank);
      ASSERT_EQ(a.size(), r.size());
      for (size_t i = 0; i < a.size(); ++i) {
        const Task &x = a[i].task, &y = r[i].task;
        expect_same_task(all, a[i], rep, r[i]);
        EXPECT_EQ(x.chunk, y.chunk);
        EXPECT_EQ(x.layer_begin, y.layer_begin);
        EXPECT_EQ(x.layer_end, y.layer_end);
        EXPECT_EQ(x.purpose, y.purpose);
        EXPECT_EQ(x.collective, y.collective);
        EXPECT_EQ(a[i].memory.alloc, r[i].memory.alloc);
        EXPECT_EQ(a[i].memory.free, r[i].memory.free);
        EXPECT_EQ(x.work < 0, y.work < 0);
        if (x.work >= 0) {
          EXPECT_EQ(all.works[static_cast<size_t>(x.work)].name,
                    rep.works[static_cast<size_t>(y.work)].name);
        }
      }
    }
  }
}

TEST(ScheduleStructure, EveryRankReadsAsEachRanksOwnReplica) {
  // An every-rank schedule keeps most ranks' tasks as what differs from
  // their stage's pattern (TaskList): each rank reads back as the schedule
  // of its own pipeline replica builds it, whole.
  std::vector<Job> jobs = varied_jobs();
  Job dualpipe = preset_job("deepseek-v3", 1024, 16);
  dualpipe.model.layers = 8;
  dualpipe.plan.pp = 4;
  dualpipe.plan.dp = 2;
  dualpipe.plan.ep = 2;
  dualpipe.plan.schedule = PipelineSchedule::kDualPipe;
  jobs.push_back(dualpipe);
  for (const Job& job : jobs) {
    SCOPED_TRACE(testing::describe(job));
    const Schedule all = built_schedule(job, Scope::kEveryRank);
    for (const int64_t rank : all.ranks) {
      BuildResult replica = build_schedule(job, Scope::kRepresentatives, kMaxScheduleTasks, rank);
      ASSERT_TRUE(replica.schedule.has_value());
      const Schedule& own = *replica.schedule;
      const std::vector<Portable> a = portable(all, rank), r = portable(own, rank);
      ASSERT_EQ(a.size(), r.size());
      const TaskList::Range range = all.rank_tasks(static_cast<size_t>(all.rank_index(rank)));
      ASSERT_EQ(range.size(), a.size());
      for (size_t i = 0; i < a.size(); ++i) {
        const Task &x = a[i].task, &y = r[i].task;
        expect_same_task(all, a[i], own, r[i]);
        EXPECT_EQ(x.rank, rank);
        EXPECT_EQ(range[i].rank, rank);
        EXPECT_EQ(x.work, y.work);
        EXPECT_EQ(x.group_seq, y.group_seq);
      }
    }
  }
}

TEST(TaskList, ReadsBackWhatWasPutWhetherARankIsSharedOrWhole) {
  auto task = [](int32_t rank, int32_t work, int32_t group, int32_t peer) {
    Task t;
    t.rank = rank;
    t.work = work;
    t.group = group;
    t.peer = peer;
    return t;
  };
  // Rank 1 runs rank 0's tasks: shared. Rank 2 runs another work and rank
  // 3 has a group where the pattern has none: both stay whole.
  const std::vector<std::vector<Task>> ranks = {
      {task(0, 0, -1, -1), task(0, -1, 3, -1), task(0, -1, -1, 4)},
      {task(1, 0, -1, -1), task(1, -1, 5, -1), task(1, -1, -1, 6)},
      {task(2, 1, -1, -1), task(2, -1, 7, -1), task(2, -1, -1, 8)},
      {task(3, 0, 9, -1)}};
  // Dependencies (begin, count) by task: rank 1's sit as rank 0's do, from 4.
  for (const bool aligned : {true, false}) {
    SCOPED_TRACE(aligned ? "dependencies where the pattern's are" : "elsewhere");
    const std::vector<std::pair<uint32_t, uint32_t>> deps = {
        {0, 1}, {1, 3}, {4, 0}, {4, 1},  {5, aligned ? 3u : 2u},
        {8, 0}, {8, 1}, {9, 1}, {10, 0}, {10, 2}};
    TaskList list;
    TaskId first = 0;
    for (const std::vector<Task>& rank_tasks : ranks) {
      for (const Task& t : rank_tasks) list.push_back(t);
      if (first > 0) {
        EXPECT_EQ(list.share_pattern(first, 0), rank_tasks.front().rank == 1);
      }
      first += static_cast<TaskId>(rank_tasks.size());
    }
    for (TaskId id = 0; id < deps.size(); ++id) {
      list.set_dependencies(id, deps[id].first, deps[id].second);
    }
    ASSERT_EQ(list.size(), 10u);
    TaskId id = 0;
    for (const std::vector<Task>& rank_tasks : ranks) {
      for (const Task& put : rank_tasks) {
        SCOPED_TRACE("task " + std::to_string(id));
        const Task got = list[id];
        EXPECT_EQ(got.rank, put.rank);
        EXPECT_EQ(got.work, put.work);
        EXPECT_EQ(got.group, put.group);
        EXPECT_EQ(got.peer, put.peer);
        EXPECT_EQ(got.dep_begin, deps[id].first);
        EXPECT_EQ(got.dep_count, deps[id].second);
        EXPECT_EQ((*list.range(id, id + 1).begin()).peer, put.peer);
        ++id;
      }
    }
  }
}

TEST(ScheduleCounts, OneFOneBTaskCounts) {
  // p = 4, m = 8, no data parallelism: m forwards and m backwards per stage,
  // one send per micro-batch and direction on inner boundaries, one optimizer.
  const Schedule s =
      built_schedule(pipeline_job(PipelineSchedule::kOneFOneB, 4, 8, 8), Scope::kEveryRank);
  ASSERT_EQ(s.ranks.size(), 4u);
  for (size_t ri = 0; ri < 4; ++ri) {
    std::map<TaskKind, int> kinds;
    std::map<CommPurpose, int> comms;
    for (const Task& t : s.rank_tasks(ri)) {
      ++kinds[t.kind];
      if (t.kind == TaskKind::kComm) ++comms[t.purpose];
    }
    EXPECT_EQ(kinds[TaskKind::kForward], 8);
    EXPECT_EQ(kinds[TaskKind::kBackward], 8);
    EXPECT_EQ(kinds[TaskKind::kOptimizer], 1);
    EXPECT_EQ(comms[CommPurpose::kActivation], ri < 3 ? 8 : 0);
    EXPECT_EQ(comms[CommPurpose::kGradient], ri > 0 ? 8 : 0);
    EXPECT_EQ(s.rank_tasks(ri).size(), 17u + (ri < 3 ? 8 : 0) + (ri > 0 ? 8 : 0));
  }
}

TEST(ScheduleLimits, MoreTasksThanTheLimitIsAProblemNotAnAllocation) {
  // The 1F1B job above has 25 + 33 + 33 + 25 = 116 tasks.
  const Job job = pipeline_job(PipelineSchedule::kOneFOneB, 4, 8, 8);
  EXPECT_TRUE(build_schedule(job, Scope::kEveryRank, 116).schedule.has_value());
  const BuildResult over = build_schedule(job, Scope::kEveryRank, 115);
  EXPECT_FALSE(over.schedule.has_value());
  ASSERT_EQ(over.problems.size(), 1u);
  EXPECT_EQ(over.problems[0].path, "/model/layers");
  EXPECT_NE(over.problems[0].message.find("more than 115 tasks"), std::string::npos)
      << over.problems[0].message;

  // 2^30 sequences in micro-batches of one: refused before the pipeline
  // order of a billion slots is laid out (it ran out of memory).
  Job huge = pipeline_job(PipelineSchedule::kOneFOneB, 4, 8, 8);
  huge.training.global_batch = int64_t{1} << 30;
  const BuildResult refused = build_schedule(huge, Scope::kRepresentatives);
  EXPECT_FALSE(refused.schedule.has_value());
  ASSERT_EQ(refused.problems.size(), 1u);
  EXPECT_EQ(refused.problems[0].path, "/training/global_batch");

  // More micro-batches per pipeline than any step runs, though the tasks
  // (4 stages x 2 x 65,537) would fit: refused by the count alone.
  Job many = pipeline_job(PipelineSchedule::kOneFOneB, 4, 8, 8);
  many.training.global_batch = kMaxMicroBatches;
  ASSERT_EQ(micro_batches(many), kMaxMicroBatches);
  EXPECT_FALSE(schedule_size_problem(many, Scope::kRepresentatives).has_value());
  many.training.global_batch = kMaxMicroBatches + 1;
  const std::optional<PlanProblem> too_many = schedule_size_problem(many, Scope::kRepresentatives);
  ASSERT_TRUE(too_many.has_value());
  EXPECT_EQ(too_many->path, "/training/global_batch");
  EXPECT_NE(too_many->message.find("65537 micro-batches per pipeline"), std::string::npos)
      << too_many->message;

  // Every rank of a large job: the problem names the simulation mode.
  Job wide = pipeline_job(PipelineSchedule::kOneFOneB, 4, 8, 8);
  wide.plan.dp = 8;
  wide.training.global_batch = 64;
  const BuildResult every = build_schedule(wide, Scope::kEveryRank, 200);
  ASSERT_EQ(every.problems.size(), 1u);
  EXPECT_EQ(every.problems[0].path, "/options/simulation");
}

TEST(Pipeline, InterleavedOrderFollowsMegatron) {
  // p = 2, v = 2, m = 4: forwards run micro-batches in groups of p per chunk.
  const Job job = pipeline_job(PipelineSchedule::kInterleavedOneFOneB, 2, 4, 4, 2);
  const std::vector<std::vector<Slot>> orders = pipeline_orders(job);
  std::vector<std::pair<int, int>> forwards;
  for (const Slot& s : orders[0]) {
    if (s.kind == SlotKind::kForward) forwards.emplace_back(s.micro_batch, s.chunk);
  }
  EXPECT_EQ(forwards, (std::vector<std::pair<int, int>>{
                          {0, 0}, {1, 0}, {0, 1}, {1, 1}, {2, 0}, {3, 0}, {2, 1}, {3, 1}}));
  // Warm-up on stage 0: (p-1)*2 + (v-1)*p = 4 forwards, then the steady
  // state's forward, then the first backward -- of the last chunk.
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(orders[0][i].kind, SlotKind::kForward);
  EXPECT_EQ(orders[0][5].kind, SlotKind::kBackward);
  EXPECT_EQ(orders[0][5].chunk, 1);
  EXPECT_EQ(orders[0][5].micro_batch, 0);
}

}  // namespace
}  // namespace podsim::strategies
