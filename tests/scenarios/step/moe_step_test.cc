// Mixture of experts in the simulated step: the fused dispatch's traffic
// against a Monte Carlo of the routing, and the step-level promises of the
// MoE model -- imbalance never speeds a step up, the report's MoE parts are
// where the time went, a dropless dispatch's host synchronisation exposes the
// launches after it, per-expert GEMMs of few rows lose to tiles and waves,
// and collectives priced on shared hardware are reused at the same price.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "hwmodels/gpu_model.h"
#include "scenarios/step/moe_dispatch.h"
#include "scenarios/step/simulate.h"
#include "scenarios/step/software.h"
#include "scenarios/step/step_simulation.h"
#include "strategies/workload.h"
#include "tests/scenarios/step/step_test_util.h"

namespace podsim::scenarios {
namespace {

/// Monte Carlo of the domains other than its own that a token's experts lie
/// in: the token's domain uniform, `chosen` of `groups` consecutive expert
/// groups drawn uniformly (all of them when 0), then top_k experts uniformly
/// among the chosen groups' experts.
double sampled_remote_domains(const strategies::MoeShape& moe, int64_t domains) {
  std::mt19937_64 rng(12345);
  const int64_t groups = moe.groups_per_token > 0 ? moe.expert_groups : 1;
  const int64_t chosen = moe.groups_per_token > 0 ? moe.groups_per_token : 1;
  const int64_t per_group = moe.experts / groups, per_domain = moe.experts / domains;
  constexpr int kTokens = 20000;
  double remote = 0;
  std::vector<int64_t> all_groups(static_cast<size_t>(groups));
  for (int64_t g = 0; g < groups; ++g) all_groups[static_cast<size_t>(g)] = g;
  for (int t = 0; t < kTokens; ++t) {
    const int64_t home = std::uniform_int_distribution<int64_t>(0, domains - 1)(rng);
    std::shuffle(all_groups.begin(), all_groups.end(), rng);
    std::vector<int64_t> pool;
    for (int64_t c = 0; c < chosen; ++c) {
      for (int64_t e = 0; e < per_group; ++e) {
        pool.push_back(all_groups[static_cast<size_t>(c)] * per_group + e);
      }
    }
    std::shuffle(pool.begin(), pool.end(), rng);
    std::set<int64_t> hit;
    for (int64_t i = 0; i < moe.top_k; ++i) hit.insert(pool[static_cast<size_t>(i)] / per_domain);
    remote += static_cast<double>(hit.size()) - (hit.contains(home) ? 1.0 : 0.0);
  }
  return remote / kTokens;
}

TEST(FusedDispatch, RemoteDomainsPerTokenMatchAMonteCarloOfTheRouting) {
  strategies::MoeShape uniform{256, 8, 2048, 1};
  // Uniform routing over 8 nodes: 8 (1 - C(224, 8) / C(256, 8)) x 7/8.
  EXPECT_NEAR(remote_domains_per_token(uniform, 8), sampled_remote_domains(uniform, 8), 0.03);
  // DeepSeek-V3's node-limited routing (8 groups, at most 4 per token) on
  // 8 nodes: fewer nodes than uniform routing; 4 (1 - C(96,8)/C(128,8)) x
  // 7/8 = 3.17 in closed form.
  strategies::MoeShape limited = uniform;
  limited.expert_groups = 8;
  limited.groups_per_token = 4;
  EXPECT_NEAR(remote_domains_per_token(limited, 8), sampled_remote_domains(limited, 8), 0.03);
  EXPECT_LT(remote_domains_per_token(limited, 8), remote_domains_per_token(uniform, 8));
  // More groups than domains (16 groups of 16 on 4 domains, 4 chosen).
  limited.expert_groups = 16;
  EXPECT_NEAR(remote_domains_per_token(limited, 4), sampled_remote_domains(limited, 4), 0.03);
  EXPECT_DOUBLE_EQ(remote_domains_per_token(uniform, 1), 0.0);
}

using testing::read;
using testing::simulate_ok;

/// A small Qwen3-like MoE model on two DGX H100 nodes, EP 16 across them.
std::string moe_scenario(const std::string& balance, const std::string& dispatcher) {
  return R"({
    "name": "small moe",
    "model": {"layers": 4, "hidden": 2048, "ffn_hidden": 6144, "heads": 16, "kv_heads": 4,
              "head_dim": 128, "vocab": 32000, "mlp": "swiglu", "norm": "rmsnorm",
              "moe": {"experts": 64, "top_k": 8, "ffn_hidden": 768, "load_balance": ")" +
         balance + R"("}},
    "cluster": {"base": "dgx-h100-superpod", "nodes": 2},
    "training": {"seq_len": 4096, "global_batch": 32, "micro_batch": 1},
    "parallelism": {"dp": 16, "ep": 16},
    "options": {"moe": {"dispatcher": ")" +
         dispatcher + R"("}}
  })";
}

TEST(MoeStep, ImbalanceNeverSpeedsAStepUpAndTheBreakdownNamesTheMoeParts) {
  for (const char* dispatcher : {"alltoall", "fused"}) {
    const Report forced = simulate_ok(read(moe_scenario("forced", dispatcher)));
    const Report learned = simulate_ok(read(moe_scenario("learned", dispatcher)));
    EXPECT_GE(learned.step_time_s, forced.step_time_s) << dispatcher;
    EXPECT_GT(learned.breakdown.moe.imbalance, forced.breakdown.moe.imbalance) << dispatcher;
    for (const Report* r : {&forced, &learned}) {
      const MoeBreakdown& m = r->breakdown.moe;
      EXPECT_GT(m.router, 0) << dispatcher;
      EXPECT_GT(m.permute, 0) << dispatcher;
      EXPECT_GT(m.grouped_gemm, 0) << dispatcher;
      EXPECT_GT(m.dispatch_combine, 0) << dispatcher;  // EP spans two nodes
      EXPECT_GT(m.imbalance, 0) << dispatcher;         // forced balance is random, not even
      EXPECT_LT(m.imbalance, m.total()) << dispatcher;
      // Parts of compute and exposed EP communication, never more.
      EXPECT_LE(m.dispatch_combine, r->breakdown.exposed_comm.ep * (1 + 1e-12)) << dispatcher;
      EXPECT_LE(m.total() - m.dispatch_combine, r->breakdown.compute + r->breakdown.recompute)
          << dispatcher;
    }
  }
  // A dense model has no MoE parts.
  std::string dense = moe_scenario("forced", "alltoall");
  const ScenarioSpec dense_spec = [&] {
    ScenarioSpec s = read(dense);
    s.model.moe.reset();
    s.plan.ep = 1;
    return s;
  }();
  EXPECT_DOUBLE_EQ(simulate_ok(dense_spec).breakdown.moe.total(), 0.0);
}

TEST(MoeStep, CollectivesPricedOnSharedHardwareAreReusedAcrossSchedulesAtTheSamePrice) {
  // Prices every work of a schedule for rank 0, with or without a cache of
  // collectives shared across schedules; returns the summed durations.
  auto price_all = [](const strategies::Schedule& schedule, const StepHardware& hw) {
    double total = 0;
    for (size_t w = 0; w < schedule.works.size(); ++w) {
      total += cost_work(schedule, hw, static_cast<int32_t>(w), 0).duration_s;
    }
    return total;
  };
  // The all-to-all dispatcher's EP collectives depend on the hardware alone.
  const ScenarioSpec spec = read(moe_scenario("forced", "alltoall"));
  const testing::StepParts parts(spec);
  ASSERT_TRUE(parts.built.schedule.has_value());
  CollectiveTimes shared;
  StepHardware with_cache = parts.hardware();
  with_cache.collective_times = &shared;
  const double alone = price_all(*parts.built.schedule, parts.hardware());
  EXPECT_EQ(price_all(*parts.built.schedule, with_cache), alone);
  ASSERT_FALSE(shared.empty());
  const size_t priced = shared.size();
  // A plan with twice the batch runs the same collectives per micro-batch:
  // its pricing finds them all and adds none, at the price it would compute.
  ScenarioSpec twice = spec;
  twice.training.global_batch *= 2;
  const testing::StepParts more(twice);
  ASSERT_TRUE(more.built.schedule.has_value());
  StepHardware more_with_cache = more.hardware();
  more_with_cache.collective_times = &shared;
  EXPECT_EQ(price_all(*more.built.schedule, more_with_cache),
            price_all(*more.built.schedule, more.hardware()));
  EXPECT_EQ(shared.size(), priced);

  // A fused dispatch's price depends on the schedule's routing (here how
  // many nodes a token's experts lie in): it stays with the schedule, so a
  // plan routed otherwise on the same hardware gets its own price, not the
  // first plan's.
  const ScenarioSpec uniform = read(moe_scenario("forced", "fused"));
  ScenarioSpec node_limited = uniform;  // DeepSeek-V3-style: 8 groups, 1 per token
  node_limited.model.moe->expert_groups = 8;
  node_limited.model.moe->groups_per_token = 1;
  const testing::StepParts first(uniform);
  const testing::StepParts second(node_limited);
  ASSERT_TRUE(first.built.schedule.has_value() && second.built.schedule.has_value());
  const double second_alone = price_all(*second.built.schedule, second.hardware());
  ASSERT_NE(second_alone, price_all(*first.built.schedule, first.hardware()));
  CollectiveTimes across_routings;
  StepHardware first_with_cache = first.hardware();
  first_with_cache.collective_times = &across_routings;
  StepHardware second_with_cache = second.hardware();
  second_with_cache.collective_times = &across_routings;
  EXPECT_EQ(price_all(*first.built.schedule, first_with_cache),
            price_all(*first.built.schedule, first.hardware()));
  EXPECT_EQ(price_all(*second.built.schedule, second_with_cache), second_alone);
}

/// Ops of a work that wait for a host synchronisation, every repeat counted.
int64_t host_syncs(const strategies::Work& w) {
  int64_t n = 0;
  for (const strategies::Segment& seg : w.segments) {
    for (const strategies::Op& op : seg.ops) n += op.host_sync ? seg.repeat : 0;
  }
  return n;
}

TEST(MoeStep, DroplessDispatchSyncsTheHostOncePerMoeLayerAndForward) {
  const ScenarioSpec spec = read(moe_scenario("forced", "alltoall"));
  ASSERT_TRUE(spec.software.moe.dispatch_host_sync);  // megatron-core
  const strategies::Job job = job_of(spec);
  EXPECT_EQ(host_syncs(strategies::make_work(job, strategies::Pass::kForward, 4, true, true)), 4);
  // The backward reuses the split sizes the forward read.
  EXPECT_EQ(host_syncs(strategies::make_work(job, strategies::Pass::kBackward, 4, true, true)), 0);
  ScenarioSpec no_sync = spec;
  no_sync.software.moe.dispatch_host_sync = false;
  EXPECT_EQ(
      host_syncs(strategies::make_work(job_of(no_sync), strategies::Pass::kForward, 4, true, true)),
      0);
}

TEST(MoeStep, TheDispatchSyncExposesTheLaunchesAfterIt) {
  // Two micro-batches of four MoE layers on one stage: eight syncs a step.
  constexpr double kSyncs = 8;
  auto step_s = [](bool sync, double dispatch_s) {
    ScenarioSpec spec = read(moe_scenario("forced", "alltoall"));
    spec.software.moe.dispatch_host_sync = sync;
    spec.software.host.dispatch_forward_s = dispatch_s;
    spec.software.optimizer.clip_host_sync = false;  // the dispatch's syncs alone
    return simulate_ok(spec).step_time_s;
  };
  // Without the sync the host's lead hides a slower launch entirely...
  EXPECT_DOUBLE_EQ(step_s(false, 5e-6), step_s(false, 10e-6));
  // ...with it each sync costs its round trip and the first launch after it,
  const hwmodels::HostCost host;
  EXPECT_GE(step_s(true, 5e-6) - step_s(false, 5e-6), kSyncs * (host.sync_s + 5e-6) * (1 - 1e-9));
  // and a slower host is seen in every forward's MoE layers.
  EXPECT_GT(step_s(true, 10e-6) - step_s(true, 5e-6), kSyncs * 5e-6);
}

/// A routed-expert GEMM of `rows` per expert over 16 local experts
/// (Qwen3-30B-A3B's fc1: 1,536 x 2,048), run as TE GroupedLinear runs it --
/// one GEMM per expert, 4 streams -- or as one grouped kernel.
hwmodels::KernelCost expert_fc1(const ScenarioSpec& spec, int64_t rows, bool per_expert) {
  strategies::Op op;
  op.kind = strategies::OpKind::kGemm;
  op.gemm = {rows, 1536, 2048, 16};
  if (per_expert) {
    op.kernels = 16;
    op.concurrent_gemms = 4;
  }
  return price_op(op, hwmodels::GpuModel(spec.cluster.gpu), job_of(spec), std::nullopt);
}

TEST(MoeStep, PerExpertGemmsOfFewRowsRunBelowTheEfficiencyOfLargeOnes) {
  const ScenarioSpec spec = read(moe_scenario("forced", "alltoall"));
  auto flops_per_s = [&](int64_t rows, bool per_expert) {
    const hwmodels::KernelCost c = expert_fc1(spec, rows, per_expert);
    return c.flops / c.time_s;
  };
  EXPECT_LT(flops_per_s(64, true), 0.5 * flops_per_s(8192, true));
  // Four experts at a time fill fewer SMs than all sixteen in one kernel and
  // pay four launches: slower, the more so the fewer the rows.
  EXPECT_GT(expert_fc1(spec, 64, true).time_s, expert_fc1(spec, 64, false).time_s);
  EXPECT_EQ(expert_fc1(spec, 64, true).kernels, 16);
  const double few = expert_fc1(spec, 64, true).time_s / expert_fc1(spec, 64, false).time_s;
  const double many = expert_fc1(spec, 8192, true).time_s / expert_fc1(spec, 8192, false).time_s;
  EXPECT_GT(few, many);
  // The megatron-core preset runs its experts that way.
  const strategies::Work forward =
      strategies::make_work(job_of(spec), strategies::Pass::kForward, 1, false, false);
  bool found = false;
  for (const strategies::Op& op : forward.segments.front().ops) {
    if (op.name != "moe_expert_fc1") continue;
    found = true;
    EXPECT_EQ(op.kernels, 4);  // 64 experts over EP 16
    EXPECT_EQ(op.concurrent_gemms, 4);
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace podsim::scenarios

namespace podsim::scenarios {
namespace {

TEST(MoeStep, AJobThatDoesNotFillItsRacksIsPlacedInEqualSegments) {
  // 128 GPUs with EP 64 on NVL72 racks: in 64-GPU segments (one per rack) the
  // all-to-alls stay on NVLink; packed, the second EP group straddles two
  // racks. The same scenario with the domain set to 64 is what placement gives.
  const std::string base = R"({
    "model": {"layers": 4, "hidden": 2048, "ffn_hidden": 6144, "heads": 16, "kv_heads": 4,
              "head_dim": 128, "vocab": 32000, "mlp": "swiglu", "norm": "rmsnorm",
              "moe": {"experts": 64, "top_k": 8, "ffn_hidden": 768, "load_balance": "forced"}},
    "training": {"seq_len": 4096, "global_batch": 128, "micro_batch": 1},
    "parallelism": {"dp": 128, "ep": 64},
    "cluster": )";
  const Report placed = simulate_ok(read(base + R"({"base": "gb200-nvl72", "nodes": 36}})"));
  const Report as64 = simulate_ok(
      read(base + R"({"base": "gb200-nvl72", "nodes": 36, "scale_up": {"domain": 64}}})"));
  EXPECT_DOUBLE_EQ(placed.step_time_s, as64.step_time_s);
  bool said = false;
  for (const std::string& w : placed.warnings)
    said |= w.find("64 GPUs of each 72") != std::string::npos;
  EXPECT_TRUE(said);
  // A job that fills its domains (72 GPUs, one rack) is left as it is.
  const Report rack = simulate_ok(read(
      R"({"model": "llama3-8b", "training": {"seq_len": 4096, "global_batch": 72},
          "parallelism": {"dp": 72}, "cluster": {"base": "gb200-nvl72", "nodes": 18}})"));
  for (const std::string& w : rack.warnings) EXPECT_EQ(w.find("GPUs of each"), std::string::npos);
}

}  // namespace
}  // namespace podsim::scenarios
