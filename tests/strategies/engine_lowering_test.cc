// Lowers schedules onto sim::Engine the simplest way (one delay per task on
// its rank's stream, dependencies as given) and checks the engine agrees with
// the list scheduler of evaluator.h: a second method for the bubble tests,
// and a sketch of the lowering the scenarios layer does with real costs.
#include <gtest/gtest.h>

#include <array>

#include "sim/engine.h"
#include "strategies/schedule.h"
#include "tests/strategies/evaluator.h"
#include "tests/strategies/test_util.h"

namespace podsim::strategies {
namespace {

constexpr int64_t kUnitPs = 1000;

double engine_makespan(const Schedule& s, const std::function<double(const Task&)>& cost,
                       bool* completed) {
  sim::Engine engine;
  std::vector<std::array<sim::StreamId, kStreams>> streams(s.ranks.size());
  for (auto& per_rank : streams) {
    for (sim::StreamId& id : per_rank) id = engine.add_stream();
  }
  std::vector<sim::ActivityId> activity(s.tasks.size());
  for (size_t ri = 0; ri < s.ranks.size(); ++ri) {
    for (uint32_t t = s.rank_begin[ri]; t < s.rank_begin[ri + 1]; ++t) {
      const Task& task = s.tasks[t];
      const auto ticks = static_cast<int64_t>(cost(task) * kUnitPs);
      activity[t] = engine.add_delay(sim::Time::from_ps(ticks),
                                     streams[ri][static_cast<size_t>(task.stream)], t);
    }
  }
  for (TaskId t = 0; t < s.tasks.size(); ++t) {
    for (TaskId before : s.dependencies(t)) engine.add_dependency(activity[before], activity[t]);
  }
  const sim::RunResult r = engine.run();
  *completed = r.completed();
  return static_cast<double>(r.end.ps()) / kUnitPs;
}

TEST(EngineLowering, EngineAgreesWithTheListScheduler) {
  // Communication costs one unit here, so transfers and DP/ZeRO collectives
  // shape the timeline too.
  const auto cost = [](const Task& t) {
    if (t.kind == TaskKind::kComm) return 1.0;
    return testing::layer_costs(1, 2, 1)(t);
  };
  for (PipelineSchedule sched :
       {PipelineSchedule::kGpipe, PipelineSchedule::kOneFOneB,
        PipelineSchedule::kInterleavedOneFOneB, PipelineSchedule::kZeroBubble}) {
    for (int zero : {0, 3}) {
      Job job = testing::preset_job("llama3-8b", 2048, 16);
      job.model.layers = 8;
      job.plan.pp = 4;
      job.plan.dp = 2;
      job.plan.schedule = sched;
      job.plan.virtual_stages = sched == PipelineSchedule::kInterleavedOneFOneB ? 2 : 1;
      job.plan.zero = zero;
      job.plan.recompute.mode = RecomputeMode::kFull;
      for (Scope scope : {Scope::kEveryRank, Scope::kRepresentatives}) {
        BuildResult r = build_schedule(job, scope);
        ASSERT_TRUE(r.schedule.has_value());
        bool completed = false;
        const double engine = engine_makespan(*r.schedule, cost, &completed);
        EXPECT_TRUE(completed);
        EXPECT_DOUBLE_EQ(engine, testing::evaluate(*r.schedule, cost).makespan)
            << testing::describe(job);
      }
    }
  }
}

}  // namespace
}  // namespace podsim::strategies
