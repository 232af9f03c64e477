// The sweep: which plans it enumerates, that the bounds never change its
// answer, and its cost and Pareto arithmetic (that threads and processes do
// not change it either: report/sweep_bytes_test.cc, on its printed bytes).
#include "scenarios/sweep/sweep.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "scenarios/run/run_model.h"
#include "scenarios/run/run_sampler.h"
#include "scenarios/step/software.h"
#include "scenarios/sweep/hardware_facts.h"
#include "strategies/job.h"
#include "tests/scenarios/sweep/sweep_test_util.h"

namespace podsim::scenarios {
namespace {

using strategies::PipelineSchedule;
using sweep_testing::kPlan;
using sweep_testing::own_target;
using sweep_testing::read_ok;
using sweep_testing::small_scenario;
using sweep_testing::SmallSweep;
using sweep_testing::sweep_ok;

TEST(SweepEnumeration, TinySpaceCountedByHand) {
  // 4 GPUs, 4 layers, 4 heads: tp in {1, 2, 4}; cp 1; pp dividing 4/tp;
  // micro-batch 1; no recompute; ZeRO-0; global batch 8 (m = 8 / dp).
  //   tp1 pp1 dp4: no pipeline, 1f1b only                         1
  //   tp1 pp2 dp2: m=4; gpipe, 1f1b, zero_bubble, interleaved v=2  4
  //                (v divides ceil(4/2)=2, m % pp = 0)
  //   tp1 pp4 dp1: m=8; gpipe, 1f1b, zero_bubble (ceil(4/4)=1: no v) 3
  //   tp2 pp1 dp2:                                                 1
  //   tp2 pp2 dp1: m=8; four schedules as above                    4
  //   tp4 pp1 dp1:                                                 1
  // = 14.
  const ScenarioSpec spec = read_ok(R"({"name": "tiny",
    "model": {"layers": 4, "hidden": 256, "ffn_hidden": 1024, "heads": 4, "vocab": 1000},
    "cluster": {"base": "dgx-h100-superpod", "nodes": 1}, "gpus": 4,
    "training": {"seq_len": 1024, "global_batch": 8, "micro_batch": 1},
    "parallelism": {"dp": 4}})");
  SweepSpace space;
  space.micro_batches = {1};
  space.recompute = {strategies::RecomputeMode::kNone};
  space.zero = {0};
  space.max_cp = 1;
  const std::vector<SweepCandidate> plans = enumerate_plans(spec, own_target(spec), space);
  ASSERT_EQ(plans.size(), 14u);
  // Canonical order: tp, then cp, pp, ..., schedule, virtual stages.
  EXPECT_EQ(plans.front().plan.tp, 1);
  EXPECT_EQ(plans.front().plan.pp, 1);
  EXPECT_EQ(plans[1].plan.pp, 2);
  EXPECT_EQ(plans[1].plan.schedule, PipelineSchedule::kGpipe);
  EXPECT_EQ(plans[3].plan.schedule, PipelineSchedule::kInterleavedOneFOneB);
  EXPECT_EQ(plans[3].plan.virtual_stages, 2);
  EXPECT_EQ(plans.back().plan.tp, 4);
  for (const SweepCandidate& c : plans) {
    EXPECT_EQ(c.plan.tp * c.plan.pp * c.plan.dp * c.plan.cp, 4);
    EXPECT_EQ(c.plan.sequence_parallel, c.plan.tp > 1);  // the scenario has tp = 1
  }
}

TEST(SweepEnumeration, ShardGroupsOnlyForZero3AndEveryPlanValid) {
  const ScenarioSpec spec = read_ok(small_scenario(2, 16, kPlan));
  const std::vector<SweepCandidate> plans = enumerate_plans(spec, own_target(spec), {});
  ASSERT_GT(plans.size(), 500u);
  std::set<
      std::tuple<int64_t, int64_t, int64_t, int64_t, int, int64_t, int, int, int64_t, int, int64_t>>
      seen;
  for (const SweepCandidate& c : plans) {
    const strategies::ParallelPlan& p = c.plan;
    if (p.shard_group > 0) {
      EXPECT_EQ(p.zero, 3);
      EXPECT_EQ((p.dp * p.cp) % p.shard_group, 0);
      EXPECT_LT(p.shard_group, p.dp * p.cp);
    }
    if (p.dp * p.cp == 1) {
      EXPECT_EQ(p.zero, 0);
    }
    EXPECT_LE(p.tp, 8);  // the scale-up domain
    EXPECT_LE(p.cp, 2);  // seq_len / 1024
    strategies::Job job = job_of(spec, p);
    job.training.micro_batch = c.micro_batch;
    EXPECT_TRUE(strategies::validate(job).empty());
    // No plan twice.
    EXPECT_TRUE(seen.emplace(p.tp, p.cp, p.pp, p.dp, static_cast<int>(p.schedule), p.virtual_stages,
                             static_cast<int>(p.recompute.mode), static_cast<int>(p.context),
                             c.micro_batch, p.zero, p.shard_group)
                    .second);
  }
}

TEST(SweepEnumeration, PlansWithMoreMicroBatchesThanASimulationTakesAreLeftOut) {
  // 2^20 sequences on 16 GPUs: only dp x micro_batch >= 16 leaves at most
  // 65,536 micro-batches per pipeline. The rest used to reach the bounds,
  // each laying out a pipeline order of millions of slots.
  const ScenarioSpec spec = read_ok(small_scenario(2, 16, kPlan, "\"h100-sxm-80g\"", 1 << 20));
  const std::vector<SweepCandidate> plans = enumerate_plans(spec, own_target(spec), {});
  ASSERT_FALSE(plans.empty());
  bool saw_dp16 = false;
  for (const SweepCandidate& c : plans) {
    EXPECT_GE(c.plan.dp * c.micro_batch, 16) << c.plan.dp << " x " << c.micro_batch;
    saw_dp16 = saw_dp16 || c.plan.dp == 16;
  }
  EXPECT_TRUE(saw_dp16);
  // 2^30 sequences leave no plan: the sweep says why, at the batch.
  const ScenarioSpec huge = read_ok(small_scenario(2, 16, kPlan, "\"h100-sxm-80g\"", 1 << 30));
  const Result<SweepOutcome> r = run_sweep(huge, own_target(huge), {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.problems().front().path, "/training/global_batch");
}

TEST(SweepTargets, SwappingTheGpuKeepsTheNetworkAndTakesItsNvlink) {
  const ScenarioSpec spec = read_ok(small_scenario(2, 16, kPlan));
  Result<SweepHardware> b200 = sweep_hardware_preset("b200");
  ASSERT_TRUE(b200.ok());
  Result<SweepTarget> t = make_sweep_target(spec, 32, b200.value());
  ASSERT_TRUE(t.ok());
  const SweepTarget& target = t.value();
  EXPECT_EQ(target.gpu, "b200");
  EXPECT_EQ(target.cluster.nodes, 4);
  EXPECT_EQ(target.cluster.gpu.name, "b200");
  // NVLink5: 900 GB/s per direction, 682.2 of it through NCCL (hardware.md 3.2).
  EXPECT_DOUBLE_EQ(target.cluster.scale_up.bw_bytes_per_s, 900e9);
  EXPECT_DOUBLE_EQ(target.cluster.scale_up.efficiency, 682.2 / 900.0);
  EXPECT_TRUE(target.cluster.gpu.has_nvls);
  // The scale-out network is the scenario's.
  EXPECT_EQ(target.cluster.scale_out.nic_bw_bytes_per_s, spec.cluster.scale_out.nic_bw_bytes_per_s);
  EXPECT_EQ(target.cluster.scale_out.tiers.size(), spec.cluster.scale_out.tiers.size());
  ASSERT_TRUE(target.price_per_gpu_hour.has_value());
  EXPECT_DOUBLE_EQ(*target.price_per_gpu_hour, reference_price("b200")->usd_per_gpu_hour);
  EXPECT_NE(target.note.find("NVLink5"), std::string::npos) << target.note;

  // A GPU count that is no whole number of nodes is refused.
  Result<SweepTarget> odd = make_sweep_target(spec, 20, std::nullopt);
  ASSERT_FALSE(odd.ok());
  EXPECT_EQ(odd.problems().front().path, "/sweep/gpus");
  // An unknown GPU preset names the key.
  Result<SweepHardware> unknown = sweep_hardware_preset("h100-sxm-800g");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.problems().front().path.rfind("/sweep/gpu-types", 0), 0u)
      << unknown.problems().front().to_string();
}

TEST(SweepTargets, TheClusterPriceAppliesToItsOwnGpu) {
  ScenarioSpec spec = read_ok(small_scenario(2, 16, kPlan));
  spec.cluster.price_per_gpu_hour = 2.25;
  Result<SweepTarget> own = make_sweep_target(spec, 16, std::nullopt);
  ASSERT_TRUE(own.ok());
  EXPECT_DOUBLE_EQ(*own.value().price_per_gpu_hour, 2.25);
  Result<SweepTarget> h200 =
      make_sweep_target(spec, 16, sweep_hardware_preset("h200-sxm-141g").value());
  ASSERT_TRUE(h200.ok());
  EXPECT_DOUBLE_EQ(*h200.value().price_per_gpu_hour,
                   reference_price("h200-sxm-141g")->usd_per_gpu_hour);
  // H200 has the H100's NVLink4.
  EXPECT_DOUBLE_EQ(h200.value().cluster.scale_up.bw_bytes_per_s, 450e9);
}

TEST(SweepTargets, AClusterPresetBringsItsOwnNetwork) {
  const ScenarioSpec spec = read_ok(small_scenario(2, 16, kPlan));
  // NVL72: trays of 4, one 72-GPU NVLink domain, one NIC per GPU.
  Result<SweepHardware> nvl = sweep_hardware_preset("gb200-nvl72");
  ASSERT_TRUE(nvl.ok());
  Result<SweepTarget> t = make_sweep_target(spec, 256, nvl.value());
  ASSERT_TRUE(t.ok()) << t.problems().front().to_string();
  EXPECT_EQ(t.value().gpu, "gb200-nvl72");
  EXPECT_EQ(t.value().cluster.nodes, 64);
  EXPECT_EQ(t.value().cluster.scale_up_domain(), 72);
  EXPECT_EQ(t.value().cluster.scale_out.nics_per_node, 4);
  EXPECT_FALSE(t.value().price_per_gpu_hour.has_value());  // no list price, no reference
  EXPECT_NE(t.value().note.find("its own"), std::string::npos) << t.value().note;
  // A TPU v6e pod: 512 chips are two 256-chip slices over the data-centre network.
  Result<SweepTarget> v6e =
      make_sweep_target(spec, 512, sweep_hardware_preset("tpu-v6e-pod").value());
  ASSERT_TRUE(v6e.ok());
  EXPECT_EQ(v6e.value().cluster.slices, 2);
  EXPECT_EQ(v6e.value().cluster.scale_up_domain(), 256);
  EXPECT_TRUE(v6e.value().list_price);
  EXPECT_DOUBLE_EQ(*v6e.value().price_per_gpu_hour, 2.70);
  Result<SweepTarget> small =
      make_sweep_target(spec, 64, sweep_hardware_preset("tpu-v6e-pod").value());
  ASSERT_TRUE(small.ok());
  EXPECT_EQ(small.value().cluster.slices, 1);  // one 8x8 slice
  // 6 chips are no whole hosts of 4.
  EXPECT_FALSE(make_sweep_target(spec, 6, sweep_hardware_preset("tpu-v5p-pod").value()).ok());
  // AMD: the mesh node as it ships.
  Result<SweepTarget> mi = make_sweep_target(spec, 16, sweep_hardware_preset("mi355x-8x").value());
  ASSERT_TRUE(mi.ok());
  EXPECT_EQ(mi.value().cluster.scale_up.topology, hwmodels::ScaleUpTopology::kMesh);
  // A GPU preset still goes into the scenario's network.
  Result<SweepTarget> b200 = make_sweep_target(spec, 16, sweep_hardware_preset("b200").value());
  ASSERT_TRUE(b200.ok());
  EXPECT_EQ(b200.value().cluster.scale_up_domain(), 8);
  EXPECT_EQ(b200.value().cluster.scale_out.tiers.size(), spec.cluster.scale_out.tiers.size());
}

TEST(SweepTargets, AChipNoPresetPutsInTheScenariosKindOfNodeRunsOnItsOwnPreset) {
  // A TPU chip or an MI355X in NVSwitch nodes is no machine anyone can
  // buy: named as a GPU against an NVSwitch scenario, each runs on the
  // preset built around it. A GPU that some preset puts in NVSwitch
  // nodes is only swapped in.
  const ScenarioSpec nvswitch = read_ok(small_scenario(2, 16, kPlan));
  const SweepHardware v6e = placed_for(nvswitch, sweep_hardware_preset("tpu-v6e").value());
  EXPECT_EQ(v6e.name, "tpu-v6e-pod");
  ASSERT_TRUE(v6e.cluster.has_value());
  EXPECT_EQ(v6e.cluster->scale_up.topology, hwmodels::ScaleUpTopology::kTorus);
  EXPECT_NE(v6e.placed_because.find("tpu-v6e named"), std::string::npos) << v6e.placed_because;
  const SweepHardware mi355x = placed_for(nvswitch, sweep_hardware_preset("mi355x").value());
  EXPECT_EQ(mi355x.name, "mi355x-8x");
  for (const char* swapped : {"b200", "gb200", "h800-sxm-80g", "a100-sxm-80g"}) {
    const SweepHardware gpu = placed_for(nvswitch, sweep_hardware_preset(swapped).value());
    EXPECT_EQ(gpu.name, swapped);
    EXPECT_FALSE(gpu.cluster.has_value()) << swapped;
    EXPECT_TRUE(gpu.placed_because.empty()) << swapped;
  }
  // make_sweep_target places it the same way, and says why.
  Result<SweepTarget> t = make_sweep_target(nvswitch, 64, sweep_hardware_preset("tpu-v6e").value());
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t.value().gpu, "tpu-v6e-pod");
  EXPECT_EQ(t.value().cluster.scale_up.topology, hwmodels::ScaleUpTopology::kTorus);
  EXPECT_NE(t.value().note.find("no preset puts it in a switch"), std::string::npos)
      << t.value().note;

  // Against an AMD mesh scenario, another AMD GPU is swapped into the mesh
  // and an NVIDIA one goes to the first preset built around it.
  ScenarioSpec mesh = nvswitch;
  mesh.cluster = sweep_hardware_preset("mi300x-8x").value().cluster.value();
  const SweepHardware amd = placed_for(mesh, sweep_hardware_preset("mi355x").value());
  EXPECT_EQ(amd.name, "mi355x");
  EXPECT_FALSE(amd.cluster.has_value());
  const SweepHardware h100 = placed_for(mesh, sweep_hardware_preset("h100").value());
  EXPECT_EQ(h100.name, "dgx-h100-superpod");  // before llama3-24k
  ASSERT_TRUE(h100.cluster.has_value());
  EXPECT_EQ(h100.cluster->scale_up.topology, hwmodels::ScaleUpTopology::kSwitch);
  // The scenario's own GPU and cluster presets stay as they are.
  EXPECT_EQ(placed_for(mesh, sweep_hardware_preset("mi300x").value()).name, "mi300x");
  EXPECT_EQ(placed_for(nvswitch, sweep_hardware_preset("tpu-v5p-pod").value()).name, "tpu-v5p-pod");
}

TEST_F(SmallSweep, BoundsDoNotChangeTheTopK) {
  // Without bounds every plan that can fit is simulated: a smaller space.
  options_.space.micro_batches = {1};
  options_.space.recompute = {strategies::RecomputeMode::kNone, strategies::RecomputeMode::kFull};
  SweepOptions all = options_;
  all.use_bounds = false;
  const SweepOutcome with = sweep_ok(spec_, own_target(spec_), options_);
  const SweepOutcome without = sweep_ok(spec_, own_target(spec_), all);
  // The bound did skip plans (else this test shows nothing) ...
  EXPECT_GT(with.plans_skipped_by_bound, with.plans_total / 2);
  EXPECT_EQ(without.plans_skipped_by_bound, 0u);
  EXPECT_EQ(with.plans_pruned_memory + with.plans_skipped_by_bound + with.plans_simulated,
            with.plans_total);
  EXPECT_EQ(without.plans_pruned_memory + without.plans_simulated, without.plans_total);
  // ... and the top K is the same plans with the same numbers.
  ASSERT_GE(with.ranked.size(), options_.top_k);
  ASSERT_GE(without.ranked.size(), options_.top_k);
  for (size_t k = 0; k < options_.top_k; ++k) {
    EXPECT_EQ(with.ranked[k].index, without.ranked[k].index) << "rank " << k + 1;
    EXPECT_EQ(with.ranked[k].outcome.step_time_s, without.ranked[k].outcome.step_time_s);
  }
  // The bound of every simulated plan is below its step time, and the bound
  // on its time to train below that time.
  for (const RankedPlan& r : without.ranked) {
    EXPECT_LE(r.step_lower_bound_s, r.outcome.step_time_s);
    EXPECT_LE(train_time_bound(spec_, options_.tokens).at(r.step_lower_bound_s), r.train_time_s);
  }
  for (size_t k = 0; k < options_.top_k; ++k) {
    EXPECT_EQ(with.ranked[k].train_time_s, without.ranked[k].train_time_s);
  }
  // The baseline's rank is exact without bounds, and inside the range with them.
  ASSERT_TRUE(without.baseline && without.baseline->rank && with.baseline && with.baseline->rank);
  EXPECT_EQ(without.baseline->rank, without.baseline->rank_worst);
  EXPECT_LE(*with.baseline->rank, *without.baseline->rank);
  EXPECT_GE(*with.baseline->rank_worst, *without.baseline->rank);
  ASSERT_TRUE(without.baseline->index.has_value());
  EXPECT_EQ(without.ranked[*without.baseline->rank - 1].index, *without.baseline->index);
}

TEST_F(SmallSweep, ProgressCountsUpAndItsTimeLeftNeverClimbs) {
  options_.space.micro_batches = {1};
  options_.jobs = 1;
  options_.simulate_per_round = 2;  // many rounds, so many estimates
  struct Seen {
    SweepProgressInfo info;
    std::chrono::steady_clock::time_point at;
  };
  std::vector<Seen> seen;
  options_.progress = [&seen](const SweepProgressInfo& info) {
    seen.push_back({info, std::chrono::steady_clock::now()});
  };
  const SweepOutcome out = sweep_ok(spec_, own_target(spec_), options_);
  ASSERT_GT(out.plans_simulated, 2u);
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back().info.done, out.plans_total);
  EXPECT_EQ(seen.back().info.simulated, out.plans_simulated);
  bool estimated = false;
  for (size_t k = 1; k < seen.size(); ++k) {
    const SweepProgressInfo& before = seen[k - 1].info;
    const SweepProgressInfo& now = seen[k].info;
    // Each report screens a plan or settles some.
    EXPECT_GE(now.done, before.done);
    EXPECT_GT(now.done + now.screened, before.done + before.screened) << "report " << k;
    EXPECT_GE(now.simulated, before.simulated);
    EXPECT_EQ(now.total, out.plans_total);
    if (before.seconds_left < 0) continue;
    estimated = true;
    // Once estimated, never unknown again, and never more than the previous
    // value counted down by the time between the two reports.
    const double between = std::chrono::duration<double>(seen[k].at - seen[k - 1].at).count();
    EXPECT_GE(now.seconds_left, 0.0) << "report " << k;
    EXPECT_LE(now.seconds_left, std::max(0.0, before.seconds_left - between) + 1e-3)
        << "report " << k;
  }
  EXPECT_TRUE(estimated);
  // The scenario's own plan, simulated before the rounds, prices the
  // simulations to come: the first round only refines, and from its end on
  // every report has a time left (there was none until a round had
  // simulated, the DeepSeek-V3 recipe sweep's first 30 s after screening).
  ASSERT_TRUE(out.baseline.has_value());
  for (const Seen& s : seen) {
    if (s.info.simulated > 1) EXPECT_GE(s.info.seconds_left, 0.0) << s.info.simulated;
  }
  // The estimate counts the plans the rounds will still refine or simulate:
  // those whose bound on the time to train is under the top-K threshold (it
  // once compared their step-time bound with it, so it counted every plan
  // left and said 60 times the time the sweep then took).
  const auto end = std::chrono::steady_clock::now();
  for (const Seen& s : seen) {
    if (s.info.seconds_left < 0) continue;
    const double actual = std::chrono::duration<double>(end - s.at).count();
    EXPECT_LE(s.info.seconds_left, 10 * actual + 0.05) << "actual " << actual << " s";
  }
}

TEST_F(SmallSweep, ScreeningIsReportedPlanByPlanWithTheTimeItHasLeft) {
  // Every plan's quick bounds come before any simulation, and on a large
  // space that takes minutes (the DeepSeek-V3 recipe's 1.77M plans): the
  // reports say how far it is instead of an unknown time left.
  struct Seen {
    SweepProgressInfo info;
    double elapsed_s;  ///< since just before the sweep started
  };
  std::vector<Seen> seen;
  const auto before_sweep = std::chrono::steady_clock::now();
  options_.progress = [&](const SweepProgressInfo& info) {
    seen.push_back(
        {info,
         std::chrono::duration<double>(std::chrono::steady_clock::now() - before_sweep).count()});
  };
  const SweepOutcome out = sweep_ok(spec_, own_target(spec_), options_);
  const uint64_t plans = out.plans_total;
  ASSERT_GT(plans, 10u);
  ASSERT_GT(seen.size(), plans);
  for (uint64_t k = 0; k < plans; ++k) {
    const SweepProgressInfo& info = seen[k].info;
    EXPECT_EQ(info.screened, k + 1);
    EXPECT_EQ(info.to_screen, plans);
    EXPECT_EQ(info.simulated, 0u);
    EXPECT_LT(info.seconds_left, 0.0);              // nothing simulated yet to price the rounds
    EXPECT_LE(info.done, out.plans_pruned_memory);  // only plans ruled out by memory settle
    if (k + 1 == plans) {
      EXPECT_FALSE(info.screening());
      EXPECT_LT(info.screening_seconds_left, 0.0);
      continue;
    }
    ASSERT_TRUE(info.screening());
    // The plans left at the wall seconds per plan so far: times the plans
    // done, it is at most the time since the sweep started.
    EXPECT_GE(info.screening_seconds_left, 0.0);
    const double per_plan_s =
        info.screening_seconds_left / static_cast<double>(info.to_screen - info.screened);
    EXPECT_LE(per_plan_s * static_cast<double>(info.screened), seen[k].elapsed_s + 1e-9)
        << "report " << k;
  }
  for (size_t k = plans; k < seen.size(); ++k) {
    EXPECT_EQ(seen[k].info.screened, plans);
    EXPECT_FALSE(seen[k].info.screening());
    EXPECT_LT(seen[k].info.screening_seconds_left, 0.0);
  }
}

TEST(SweepScreening, SpreadOrderVisitsEveryPlanOnceInWholeBlocksFarApart) {
  const std::pair<size_t, size_t> cases[] = {{0, 4096}, {1, 4096}, {10, 4},      {12, 3},
                                             {100, 1},  {77, 0},   {28677, 4096}};
  for (const auto& [count, block] : cases) {
    const std::vector<size_t> order = spread_order(count, block);
    std::vector<size_t> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    std::vector<size_t> every(count);
    std::iota(every.begin(), every.end(), size_t{0});
    EXPECT_EQ(sorted, every) << count << " in blocks of " << block;
    // Runs of consecutive indices, each starting on a block boundary.
    const size_t b = std::max<size_t>(1, block);
    for (size_t k = 1; k < order.size(); ++k) {
      if (order[k] % b != 0) EXPECT_EQ(order[k], order[k - 1] + 1) << count << " at " << k;
    }
  }
  // The second block visited is not the first one's neighbour.
  const std::vector<size_t> order = spread_order(80, 8);
  EXPECT_EQ(order[0], 0u);
  EXPECT_GT(order[8] / 8, 1u);
}

TEST_F(SmallSweep, CostAndParetoFront) {
  Result<SweepTarget> small = make_sweep_target(spec_, 8, std::nullopt);
  Result<SweepTarget> large = make_sweep_target(spec_, 16, std::nullopt);
  Result<SweepTarget> h200 =
      make_sweep_target(spec_, 16, sweep_hardware_preset("h200-sxm-141g").value());
  ASSERT_TRUE(small.ok() && large.ok() && h200.ok());
  options_.tokens = 1e9;
  const SweepOutcome o = sweep_ok(spec_, {small.value(), large.value(), h200.value()}, options_);
  ASSERT_TRUE(o.cost_in_dollars);
  ASSERT_FALSE(o.ranked.empty());
  const double tokens_per_step =
      static_cast<double>(spec_.training.global_batch * spec_.training.seq_len);
  for (const RankedPlan& r : o.ranked) {
    const SweepTarget& t = o.targets[o.candidates[r.index].target];
    EXPECT_NEAR(r.outcome.tokens_per_s * r.outcome.step_time_s, tokens_per_step,
                1e-9 * tokens_per_step);
    EXPECT_NEAR(r.failure_free_time_s, 1e9 / r.outcome.tokens_per_s, 1e-9 * r.train_time_s);
    // The time to train is the run model's expectation for the plan.
    const ScenarioSpec plan = candidate_scenario(spec_, t, o.candidates[r.index]);
    EXPECT_EQ(
        r.train_time_s,
        expected_wall_s(run_model(plan, 1e9, r.outcome.step_time_s, r.outcome.step_time_s).inputs));
    EXPECT_GT(r.train_time_s, r.failure_free_time_s);
    EXPECT_NEAR(r.gpu_hours, r.train_time_s / 3600 * static_cast<double>(t.gpus),
                1e-9 * r.gpu_hours);
    EXPECT_NEAR(*r.cost_usd, r.gpu_hours * *t.price_per_gpu_hour, 1e-9 * *r.cost_usd);
  }
  // The front, by brute force over all pairs: a plan is dominated by another
  // that is no slower and no dearer, better in one of the two or, on an exact
  // tie, earlier in the ranking.
  std::vector<size_t> front;
  for (size_t k = 0; k < o.ranked.size(); ++k) {
    bool dominated = false;
    for (size_t j = 0; j < o.ranked.size() && !dominated; ++j) {
      if (j == k) continue;
      const double tj = o.ranked[j].train_time_s, tk = o.ranked[k].train_time_s;
      const double cj = *o.ranked[j].cost_usd, ck = *o.ranked[k].cost_usd;
      dominated = tj <= tk && cj <= ck && (tj < tk || cj < ck || j < k);
    }
    if (!dominated) front.push_back(k);
  }
  EXPECT_EQ(o.pareto, front);
  // Each target's best plan is simulated even when others are faster.
  std::set<uint32_t> targets_ranked;
  for (const RankedPlan& r : o.ranked) targets_ranked.insert(o.candidates[r.index].target);
  EXPECT_EQ(targets_ranked.size(), 3u);
}

}  // namespace
}  // namespace podsim::scenarios

namespace podsim::scenarios {
namespace {

// Ranked by expected time to train: a plan on more GPUs pays for their
// failure rate. With parts a thousand times as unreliable as the defaults,
// the 16-GPU target (2 nodes) fails twice as often as the 8-GPU one.
TEST_F(SmallSweep, MoreGpusPayForTheirFailureRate) {
  ReliabilitySpec& r = spec_.reliability;
  for (double* rate : {&r.gpu_per_1000_gpu_days, &r.hbm_per_1000_gpu_days,
                       &r.host_per_1000_node_days, &r.software_per_1000_node_days}) {
    *rate *= 1000;
  }
  Result<SweepTarget> one = make_sweep_target(spec_, 8, std::nullopt);
  Result<SweepTarget> two = make_sweep_target(spec_, 16, std::nullopt);
  ASSERT_TRUE(one.ok() && two.ok());
  options_.tokens = 2e10;
  const SweepOutcome o = sweep_ok(spec_, {one.value(), two.value()}, options_);
  const RankedPlan* best[2] = {nullptr, nullptr};
  for (size_t k = 0; k < o.ranked.size(); ++k) {
    const RankedPlan& p = o.ranked[k];
    if (k > 0) {
      EXPECT_LE(o.ranked[k - 1].train_time_s, p.train_time_s);
    }
    const RankedPlan*& b = best[o.candidates[p.index].target];
    if (b == nullptr) b = &p;
  }
  ASSERT_TRUE(best[0] && best[1]);
  const double ettr_one = best[0]->failure_free_time_s / best[0]->train_time_s;
  const double ettr_two = best[1]->failure_free_time_s / best[1]->train_time_s;
  EXPECT_LT(ettr_two, ettr_one);
  EXPECT_LT(ettr_one, 0.99);  // the rates matter at all
  // The top plans carry their sampled runs; the others do not.
  ASSERT_TRUE(o.ranked.front().run.has_value());
  EXPECT_FALSE(o.ranked.back().run.has_value());
  EXPECT_GT(o.ranked.front().run->interruptions.mean, 0);
  // The scenario's own plan is ranked overall and on its own target: its
  // place among all ranked plans, and among those of its target alone.
  ASSERT_TRUE(o.baseline && o.baseline->index && o.baseline->rank_in_target);
  uint64_t before = 0, before_in_target = 0;
  bool found = false;
  for (const RankedPlan& p : o.ranked) {
    if (p.index == *o.baseline->index) {
      found = true;
      break;
    }
    ++before;
    before_in_target += o.candidates[p.index].target == o.baseline->target ? 1 : 0;
  }
  ASSERT_TRUE(found);
  EXPECT_EQ(*o.baseline->rank, before + 1);
  EXPECT_EQ(*o.baseline->rank_in_target, before_in_target + 1);
  EXPECT_LT(*o.baseline->rank_in_target, *o.baseline->rank);  // the other target has plans ahead
}

}  // namespace
}  // namespace podsim::scenarios
