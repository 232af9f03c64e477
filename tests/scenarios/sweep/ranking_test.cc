// What users compare by: identical plans collapsed into one row, plans tied
// within the model's error, a headroom floor, the context-parallel
// algorithm swept and any dimension pinned by --fix.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "scenarios/sweep/space_options.h"
#include "scenarios/sweep/sweep.h"
#include "tests/scenarios/sweep/sweep_test_util.h"
#include "tests/scenarios/test_units.h"

namespace podsim::scenarios {
namespace {

using strategies::ContextAlgorithm;
using sweep_testing::kPlan;
using sweep_testing::own_target;
using sweep_testing::read_ok;
using sweep_testing::small_scenario;
using sweep_testing::SmallSweep;
using sweep_testing::sweep_ok;
using testing::kGiB;

auto results_of(const SweepOutcome& o, const RankedPlan& r) {
  return std::make_tuple(o.candidates[r.index].target, r.outcome.step_time_s,
                         r.outcome.memory_peak_bytes, r.outcome.exposed_comm_s,
                         r.outcome.bubble_fraction, r.train_time_s);
}

TEST_F(SmallSweep, IdenticalResultsShareOneRowAndTheLowerZeroStageIsPreferred) {
  // Without bounds every fitting plan is ranked, so the ZeRO-1 / ZeRO-2
  // twins of pipelined plans (gradients reduced once per step either way)
  // are all there.
  options_.use_bounds = false;
  options_.space.recompute = {strategies::RecomputeMode::kNone};
  options_.space.max_cp = 1;
  const SweepOutcome o = sweep_ok(spec_, own_target(spec_), options_);
  ASSERT_FALSE(o.ranked.empty());
  size_t collapsed = 0;
  std::set<decltype(results_of(o, o.ranked.front()))> rows;
  for (size_t k = 0; k < o.ranked.size(); ++k) {
    const RankedPlan& r = o.ranked[k];
    if (!r.collapsed_into) {
      // No two rows of their own have the same results.
      EXPECT_TRUE(rows.insert(results_of(o, r)).second) << k;
      continue;
    }
    ++collapsed;
    const RankedPlan& kept = o.ranked[*r.collapsed_into];
    EXPECT_FALSE(kept.collapsed_into.has_value());
    EXPECT_EQ(results_of(o, r), results_of(o, kept));
    EXPECT_FALSE(kept.preferred_because.empty());
    const strategies::ParallelPlan& p = o.candidates[r.index].plan;
    const strategies::ParallelPlan& q = o.candidates[kept.index].plan;
    EXPECT_LE(q.zero, p.zero);
    if (p.pp > 1 && p.zero == 2 && q.zero == 1) {
      EXPECT_NE(kept.preferred_because.find("lower ZeRO stage"), std::string::npos)
          << kept.preferred_because;
    }
  }
  EXPECT_GT(collapsed, 0u);
}

TEST_F(SmallSweep, TiesAreWithinTheGivenErrorOfTheTargetsFastestStep) {
  const SweepOutcome base = sweep_ok(spec_, own_target(spec_), options_);
  ASSERT_GE(base.ranked.size(), 3u);
  SweepOutcome o = base;
  double fastest = o.ranked.front().outcome.step_time_s;
  for (const RankedPlan& r : o.ranked) fastest = std::min(fastest, r.outcome.step_time_s);
  // An error that ties the second-fastest step and not the slowest.
  std::vector<double> steps;
  for (const RankedPlan& r : o.ranked) steps.push_back(r.outcome.step_time_s);
  std::sort(steps.begin(), steps.end());
  const double error = steps[1] / fastest - 1 + 1e-9;
  ASSERT_LT(fastest * (1 + error), steps.back());
  mark_ties(o, {TargetModelError{error, "family", 3, "basis"}});
  size_t tied = 0;
  for (const RankedPlan& r : o.ranked) {
    EXPECT_EQ(r.tied_with_best, r.outcome.step_time_s <= fastest * (1 + error));
    tied += r.tied_with_best ? 1 : 0;
  }
  EXPECT_GE(tied, 2u);
  EXPECT_LT(tied, o.ranked.size());
  ASSERT_EQ(o.model_error.size(), 1u);
  EXPECT_EQ(o.model_error[0]->family, "family");
  // No measured error: nothing is tied.
  mark_ties(o, {});
  for (const RankedPlan& r : o.ranked) EXPECT_FALSE(r.tied_with_best);
}

TEST_F(SmallSweep, MinHeadroomRanksTheBestPlanThatLeavesItFree) {
  // The reference: every plan simulated, filtered by hand (a smaller space
  // keeps that to seconds).
  options_.space.recompute = {strategies::RecomputeMode::kNone};
  options_.space.max_cp = 1;
  SweepOptions all = options_;
  all.use_bounds = false;
  const SweepOutcome every = sweep_ok(spec_, own_target(spec_), all);
  ASSERT_FALSE(every.ranked.empty());
  auto headroom = [](const RankedPlan& r) {
    return r.outcome.memory_capacity_bytes - r.outcome.memory_peak_bytes;
  };
  // Ask for more than the fastest plan leaves free, less than the most any leaves.
  double most = 0;
  for (const RankedPlan& r : every.ranked) most = std::max(most, headroom(r));
  const double asked = (headroom(every.ranked.front()) + most) / 2;
  ASSERT_GT(asked, headroom(every.ranked.front()));
  const RankedPlan* expected = nullptr;
  for (const RankedPlan& r : every.ranked) {
    if (headroom(r) >= asked) {
      expected = &r;
      break;
    }
  }
  ASSERT_NE(expected, nullptr);
  options_.min_headroom.bytes = asked;
  const SweepOutcome o = sweep_ok(spec_, own_target(spec_), options_);
  ASSERT_FALSE(o.ranked.empty());
  for (const RankedPlan& r : o.ranked) EXPECT_GE(headroom(r), asked);
  EXPECT_EQ(o.ranked.front().index, expected->index);
  EXPECT_EQ(o.plans_total, o.plans_pruned_memory + o.plans_skipped_by_bound + o.plans_simulated);
  // As a fraction of the capacity.
  options_.min_headroom = {};
  options_.min_headroom.fraction = asked / expected->outcome.memory_capacity_bytes;
  const SweepOutcome f = sweep_ok(spec_, own_target(spec_), options_);
  ASSERT_FALSE(f.ranked.empty());
  EXPECT_EQ(f.ranked.front().index, expected->index);
}

TEST(SweepOptions, MinHeadroomTakesASizeOrAFraction) {
  const Result<HeadroomRequirement> size = parse_min_headroom("4GiB");
  ASSERT_TRUE(size.ok());
  EXPECT_EQ(size.value().bytes, 4 * kGiB);
  EXPECT_EQ(size.value().required_bytes(80 * kGiB), 4 * kGiB);
  const Result<HeadroomRequirement> fraction = parse_min_headroom("0.1");
  ASSERT_TRUE(fraction.ok());
  EXPECT_DOUBLE_EQ(fraction.value().required_bytes(80 * kGiB), 8 * kGiB);
  for (const char* bad : {"4", "-0.1", "4 GB/s", "lots", ""}) {
    const Result<HeadroomRequirement> r = parse_min_headroom(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.problems().front().path, "--min-headroom");
  }
}

TEST(SweepEnumeration, ContextParallelPlansTryEveryAlgorithm) {
  const ScenarioSpec spec = read_ok(small_scenario(2, 16, kPlan));
  const std::vector<SweepCandidate> plans = enumerate_plans(spec, own_target(spec), {});
  std::set<ContextAlgorithm> with_cp;
  for (const SweepCandidate& c : plans) {
    if (c.plan.cp > 1) {
      with_cp.insert(c.plan.context);
    } else {
      EXPECT_EQ(c.plan.context, spec.plan.context);  // no CP: one plan, not three
    }
  }
  EXPECT_EQ(with_cp,
            (std::set<ContextAlgorithm>{ContextAlgorithm::kRing, ContextAlgorithm::kUlysses,
                                        ContextAlgorithm::kAllGather}));
}

TEST(SweepOptions, FixPinsEachDimensionAndNamesWhatItCannotRead) {
  const ScenarioSpec spec = read_ok(small_scenario(2, 16, kPlan));
  SweepSpace space;
  std::vector<std::string> pinned;
  for (const char* fix : {"tp=2", "cp_algorithm=ulysses", "zero=1", "schedule=1f1b", "mb=1",
                          "recompute=selective", "pipeline_parallel=2"}) {
    EXPECT_FALSE(apply_sweep_fix(fix, space, pinned).has_value()) << fix;
  }
  const std::vector<SweepCandidate> plans = enumerate_plans(spec, own_target(spec), space);
  ASSERT_FALSE(plans.empty());
  bool saw_cp = false;
  for (const SweepCandidate& c : plans) {
    EXPECT_EQ(c.plan.tp, 2);
    EXPECT_EQ(c.plan.pp, 2);
    EXPECT_EQ(c.plan.zero, 1);
    EXPECT_EQ(c.plan.schedule, strategies::PipelineSchedule::kOneFOneB);
    EXPECT_EQ(c.plan.recompute.mode, strategies::RecomputeMode::kSelective);
    EXPECT_EQ(c.micro_batch, 1);
    if (c.plan.cp > 1) {
      saw_cp = true;
      EXPECT_EQ(c.plan.context, ContextAlgorithm::kUlysses);
    }
  }
  EXPECT_TRUE(saw_cp);
  // A pinned tp past the default limit (the 8-GPU scale-up domain) is tried.
  SweepSpace wide;
  std::vector<std::string> once;
  ASSERT_FALSE(apply_sweep_fix("tp=16", wide, once).has_value());
  const std::vector<SweepCandidate> tp16 = enumerate_plans(spec, own_target(spec), wide);
  ASSERT_FALSE(tp16.empty());
  for (const SweepCandidate& c : tp16) EXPECT_EQ(c.plan.tp, 16);

  struct Bad {
    const char* fix;
    const char* says;
  };
  for (const Bad& bad : {Bad{"tq=2", "did you mean 'tp'"}, Bad{"tp=two", "unknown value 'two'"},
                         Bad{"schedule=1f1f", "gpipe, 1f1b"}, Bad{"zero=4", "0, 1, 2 or 3"},
                         Bad{"cp_algorithm=rings", "ring, ulysses or all_gather"},
                         Bad{"tp", "KEY=VALUE"}, Bad{"tp=2", "pinned twice"}}) {
    // Only the last case repeats a key pinned above.
    std::vector<std::string> before =
        std::string(bad.says) == "pinned twice" ? pinned : std::vector<std::string>{};
    const std::optional<Problem> p = apply_sweep_fix(bad.fix, space, before);
    ASSERT_TRUE(p.has_value()) << bad.fix;
    EXPECT_EQ(p->path, "--fix");
    EXPECT_NE((p->message + " " + p->hint).find(bad.says), std::string::npos)
        << bad.fix << ": " << p->to_string();
  }
}

}  // namespace
}  // namespace podsim::scenarios
