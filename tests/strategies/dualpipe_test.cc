// DualPipe (DeepSeek-V3 section 3.2.1, deepseek-ai/DualPipe): the order
// transcribed from DualPipe.step, its bubble and memory against the paper's
// Table 2, and the schedule built from it.
#include <gtest/gtest.h>

#include <map>

#include "strategies/memory.h"
#include "strategies/model_counts.h"
#include "strategies/schedule.h"
#include "tests/strategies/evaluator.h"
#include "tests/strategies/test_util.h"

namespace podsim::strategies {
namespace {

Job dualpipe_job(int64_t pp, int64_t micro_batches) {
  // Uniform stages: 2 layers each, no embedding/head asymmetry that matters
  // to the unit costs below.
  Job job = testing::preset_job("llama3-8b", 2048, micro_batches);
  job.model.layers = 2 * pp;
  job.plan.pp = pp;
  job.plan.schedule = PipelineSchedule::kDualPipe;
  job.options.overlap_dp = false;
  return job;
}

TEST(DualPipe, EveryStageRunsEachMicroBatchOnceInEachDirection) {
  const Job job = dualpipe_job(8, 32);
  const std::vector<std::vector<Slot>> orders = pipeline_orders(job);
  for (const std::vector<Slot>& order : orders) {
    std::map<std::pair<int, int>, int> forwards, backwards, weights, inputs;
    for (const Slot& s : order) {
      switch (s.kind) {
        case SlotKind::kForward:
          ++forwards[{s.micro_batch, s.chunk}];
          break;
        case SlotKind::kBackward:
          ++backwards[{s.micro_batch, s.chunk}];
          break;
        case SlotKind::kBackwardInput:
          ++backwards[{s.micro_batch, s.chunk}];
          ++inputs[{s.micro_batch, s.chunk}];
          break;
        case SlotKind::kBackwardWeight:
          ++weights[{s.micro_batch, s.chunk}];
          break;
        case SlotKind::kForwardBackward:
          ++forwards[{s.micro_batch, s.chunk}];
          ++backwards[{s.backward_micro_batch, s.backward_chunk}];
          break;
      }
    }
    // Micro-batches 0-15 enter at rank 0 (chunk 0), 16-31 at rank 7 (chunk 1).
    EXPECT_EQ(forwards.size(), 32u);
    EXPECT_EQ(backwards.size(), 32u);
    for (const auto& [key, n] : forwards) {
      EXPECT_EQ(n, 1);
      EXPECT_EQ(key.second, key.first < 16 ? 0 : 1);
    }
    for (const auto& [key, n] : backwards) EXPECT_EQ(n, 1);
    EXPECT_EQ(weights, inputs);  // every input-only backward gets its W
  }
}

// The paper's Table 2: bubble (PP/2 - 1)(F&B + B - 3W), activations PP + 1
// stage-micro-batches per device, twice the parameters. On uniform stages
// with F = B_input = W = 1 (B = 2, F&B = F + B = 3) the bubble is PP - 2 on
// every rank.
TEST(DualPipe, BubbleMatchesTheClosedFormOnUniformStages) {
  for (const auto& [pp, m] : std::vector<std::pair<int64_t, int64_t>>{{4, 8}, {8, 32}, {16, 32}}) {
    const Job job = dualpipe_job(pp, m);
    const BuildResult built = build_schedule(job, Scope::kRepresentatives);
    ASSERT_TRUE(built.schedule) << (built.problems.empty() ? "" : built.problems[0].message);
    const Schedule& s = *built.schedule;
    const double f = 1, b_input = 1, w = 1;
    auto duration = [&](const Task& t) {
      switch (t.kind) {
        case TaskKind::kForward:
          return f;
        case TaskKind::kBackward:
          return b_input + w;
        case TaskKind::kBackwardInput:
          return b_input;
        case TaskKind::kBackwardWeight:
          return w;
        case TaskKind::kForwardBackward:
          return f + b_input + w;
        default:
          return 0.0;  // communication and optimizer: free
      }
    };
    const testing::Timeline tl = testing::evaluate(s, duration);
    ASSERT_EQ(tl.done, s.tasks.size());
    const double fb = f + b_input + w, b = b_input + w;
    const double closed_form = (static_cast<double>(pp) / 2 - 1) * (fb + b - 3 * w);
    for (size_t ri = 0; ri < s.ranks.size(); ++ri) {
      double busy = 0;
      for (const Task& t : s.rank_tasks(ri)) busy += duration(t);
      EXPECT_DOUBLE_EQ(tl.makespan - busy, closed_form) << "pp " << pp << " rank " << ri;
    }
  }
}

TEST(DualPipe, ActivationsOfPpPlusOneStagesAndTwiceTheParameters) {
  const Job job = dualpipe_job(8, 32);
  for (const std::vector<Slot>& order : pipeline_orders(job)) {
    int live = 0, peak = 0;
    for (const Slot& s : order) {
      if (s.kind == SlotKind::kForward || s.kind == SlotKind::kForwardBackward) {
        peak = std::max(peak, ++live);
      }
      if (s.kind == SlotKind::kBackward || s.kind == SlotKind::kBackwardInput ||
          s.kind == SlotKind::kForwardBackward) {
        --live;
      }
    }
    EXPECT_EQ(peak, 8 + 1);
  }
  Job one = job;
  one.plan.schedule = PipelineSchedule::kOneFOneB;
  // Rank 3 holds stages 3 and 4 (no embedding or head).
  EXPECT_DOUBLE_EQ(stage_parameters(job, 3).total(), 2 * stage_parameters(one, 3).total());
  EXPECT_EQ(stage_chunks(job, 3)[1].model_chunk, 4);
  EXPECT_TRUE(stage_chunks(job, 7)[1].has_embedding);  // the reverse direction's first stage
}

TEST(DualPipe, NeedsEvenStagesAndAtLeastTwiceAsManyMicroBatches) {
  EXPECT_TRUE(validate(dualpipe_job(8, 16)).empty());
  EXPECT_FALSE(validate(dualpipe_job(8, 14)).empty());
  Job odd = dualpipe_job(8, 16);
  odd.plan.pp = 7;
  odd.model.layers = 14;
  EXPECT_FALSE(validate(odd).empty());
}

}  // namespace
}  // namespace podsim::strategies
