// The max-min solver on its own: rates are checked directly.
#include "sim/flow_network.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "tests/sim/engine_test_util.h"
#include "tests/sim/max_min_reference.h"

namespace podsim::sim {
namespace {

using testing::kG;

std::vector<PathHop> hops(std::initializer_list<uint32_t> links, uint32_t multiplicity = 1) {
  std::vector<PathHop> out;
  for (const uint32_t link : links) out.push_back(PathHop{LinkId{link}, multiplicity});
  return out;
}

std::vector<uint32_t> changed_flows(std::span<const FlowNetwork::RateChange> changes) {
  std::vector<uint32_t> flows;
  for (const auto& change : changes) flows.push_back(change.flow);
  std::sort(flows.begin(), flows.end());
  return flows;
}

// The three-link example of EngineFlow.ClassicMaxMinExample, rates direct.
TEST(FlowNetwork, TextbookRates) {
  FlowNetwork net;
  const uint32_t l1 = net.add_link(10 * kG);
  const uint32_t l2 = net.add_link(6 * kG);
  const uint32_t l3 = net.add_link(2 * kG);
  const uint32_t f0 = net.add_flow(hops({l1, l2, l3}), 0);
  const uint32_t f1 = net.add_flow(hops({l1}), 0);
  const uint32_t f2 = net.add_flow(hops({l1, l2}), 0);
  const uint32_t f3 = net.add_flow(hops({l3}), 0);
  const uint32_t f4 = net.add_flow(hops({l2}), 0);
  for (uint32_t f = 0; f < 5; ++f) net.activate(f);
  EXPECT_TRUE(net.dirty());
  EXPECT_EQ(net.solve().size(), 5u);
  EXPECT_FALSE(net.dirty());
  EXPECT_EQ(net.rate(f0), 1 * kG);
  EXPECT_EQ(net.rate(f3), 1 * kG);
  EXPECT_EQ(net.rate(f2), 2.5 * kG);
  EXPECT_EQ(net.rate(f4), 2.5 * kG);
  EXPECT_EQ(net.rate(f1), 6.5 * kG);
}

TEST(FlowNetwork, SolveCoversOnlyTheAffectedComponent) {
  FlowNetwork net;
  const uint32_t l0 = net.add_link(1 * kG);
  const uint32_t l1 = net.add_link(1 * kG);
  const uint32_t a = net.add_flow(hops({l0}), 0);
  const uint32_t b = net.add_flow(hops({l1}), 0);
  const uint32_t c = net.add_flow(hops({l0}), 0);
  net.activate(a);
  net.activate(b);
  EXPECT_EQ(changed_flows(net.solve()), (std::vector<uint32_t>{a, b}));
  net.activate(c);
  const auto changes = net.solve();
  EXPECT_EQ(changed_flows(changes), (std::vector<uint32_t>{a, c}));
  EXPECT_EQ(net.last_solved_flows(), 2u);  // b's component was not visited
  for (const auto& change : changes) {
    EXPECT_EQ(change.old_rate, change.flow == a ? 1 * kG : 0.0);
  }
  EXPECT_EQ(net.rate(a), 0.5 * kG);
  EXPECT_EQ(net.rate(b), 1 * kG);
  net.deactivate(a);
  EXPECT_EQ(changed_flows(net.solve()), (std::vector<uint32_t>{c}));
  EXPECT_EQ(net.rate(c), 1 * kG);
  EXPECT_EQ(net.rate(a), 0.0);
}

TEST(FlowNetwork, UnchangedRatesAreNotReported) {
  // a crosses L0 (1 GB/s, shared with b) and L1 (10 GB/s): bottleneck L0.
  // c joining L1 takes the rest of L1 and leaves a and b where they were.
  FlowNetwork net;
  const uint32_t l0 = net.add_link(1 * kG);
  const uint32_t l1 = net.add_link(10 * kG);
  const uint32_t a = net.add_flow(hops({l0, l1}), 0);
  const uint32_t b = net.add_flow(hops({l0}), 0);
  const uint32_t c = net.add_flow(hops({l1}), 0);
  net.activate(a);
  net.activate(b);
  net.solve();
  net.activate(c);
  EXPECT_EQ(changed_flows(net.solve()), (std::vector<uint32_t>{c}));
  EXPECT_EQ(net.last_solved_flows(), 2u);  // a and c; b is held at its rate
  EXPECT_EQ(net.rate(a), 0.5 * kG);
  EXPECT_EQ(net.rate(c), 9.5 * kG);
}

TEST(FlowNetwork, MultiplicityLoadsTheLinkPerImage) {
  FlowNetwork net;
  const uint32_t link = net.add_link(4 * kG);
  const uint32_t other = net.add_link(100 * kG);
  // Multiplicity 3 on the shared link, 1 on its own link.
  std::vector<PathHop> path{PathHop{LinkId{other}, 1}, PathHop{LinkId{link}, 3}};
  const uint32_t images = net.add_flow(path, 0);
  const uint32_t plain = net.add_flow(hops({link}), 0);
  net.activate(images);
  net.activate(plain);
  net.solve();
  EXPECT_EQ(net.rate(images), 1 * kG);
  EXPECT_EQ(net.rate(plain), 1 * kG);
}

TEST(FlowNetwork, CapsFreezeFirstAndTheRestRefill) {
  FlowNetwork net;
  const uint32_t link = net.add_link(3 * kG);
  const uint32_t slow = net.add_flow(hops({link}), 0.5 * kG);
  const uint32_t mid = net.add_flow(hops({link}), 2 * kG);  // cap above its share: no effect
  const uint32_t free = net.add_flow(hops({link}), 0);
  const uint32_t alone = net.add_flow({}, 0.7 * kG);  // no link at all
  for (uint32_t f = 0; f < 4; ++f) net.activate(f);
  net.solve();
  EXPECT_EQ(net.rate(slow), 0.5 * kG);
  EXPECT_EQ(net.rate(mid), 1.25 * kG);
  EXPECT_EQ(net.rate(free), 1.25 * kG);
  EXPECT_EQ(net.rate(alone), 0.7 * kG);
}

TEST(FlowNetwork, SameLinkTwiceInAPathCountsTwice) {
  FlowNetwork net;
  const uint32_t link = net.add_link(3 * kG);
  const uint32_t looped = net.add_flow(hops({link, link}), 0);
  const uint32_t plain = net.add_flow(hops({link}), 0);
  net.activate(looped);
  net.activate(plain);
  net.solve();
  EXPECT_EQ(net.rate(looped), 1 * kG);
  EXPECT_EQ(net.rate(plain), 1 * kG);
  net.deactivate(looped);  // both slots leave the link's list
  net.solve();
  EXPECT_EQ(net.rate(plain), 3 * kG);
}

// Random joins and leaves on random networks; after every solve all active
// rates must equal a from-scratch global solve, and the reported changes must
// be exactly the flows whose rate moved.
void check_against_reference(uint64_t seed, int links, int flows, int steps, int max_hops) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> cap_d(1, 8), hops_d(1, max_hops), mult_d(1, 3), batch_d(1, 3);
  std::bernoulli_distribution capped_d(0.15), multi_d(0.2), join_d(0.6);
  FlowNetwork net;
  std::vector<double> capacity;
  for (int l = 0; l < links; ++l) {
    capacity.push_back(cap_d(rng) * kG);
    net.add_link(capacity.back());
  }
  std::uniform_int_distribution<int> link_d(0, links - 1), flow_d(0, flows - 1);
  std::vector<reference::RefFlow> declared;
  for (int f = 0; f < flows; ++f) {
    reference::RefFlow flow;
    flow.cap = capped_d(rng) ? 0.5 * kG : 0.0;
    std::vector<PathHop> path;
    const int nh = hops_d(rng);
    for (int h = 0; h < nh; ++h) {
      const int l = link_d(rng);
      const int m = multi_d(rng) ? mult_d(rng) : 1;
      flow.hops.emplace_back(l, m);
      path.push_back(PathHop{LinkId{static_cast<uint32_t>(l)}, static_cast<uint32_t>(m)});
    }
    declared.push_back(flow);
    net.add_flow(path, flow.cap);
  }
  std::vector<bool> active(flows, false);
  std::vector<double> before(flows, 0.0);
  bool some_solve_was_local = false;
  for (int step = 0; step < steps; ++step) {
    const int batch = batch_d(rng);
    for (int k = 0; k < batch; ++k) {
      const auto f = static_cast<uint32_t>(flow_d(rng));
      if (!active[f] && join_d(rng)) {
        net.activate(f);
        active[f] = true;
      } else if (active[f]) {
        net.deactivate(f);
        active[f] = false;
        before[f] = 0.0;
      }
    }
    const auto changes = net.solve();
    size_t active_count = 0;
    for (int f = 0; f < flows; ++f) active_count += active[f] ? 1 : 0;
    if (net.last_solved_flows() < active_count) some_solve_was_local = true;
    std::vector<bool> changed(flows, false);
    for (const auto& change : changes) {
      ASSERT_TRUE(active[change.flow]);
      ASSERT_EQ(change.old_rate, before[change.flow]) << "step " << step;
      changed[change.flow] = true;
    }
    std::vector<int> on;
    for (int f = 0; f < flows; ++f) {
      if (active[f]) on.push_back(f);
    }
    const std::vector<double> expected = reference::naive_max_min(capacity, declared, on);
    for (const int f : on) {
      ASSERT_NEAR(net.rate(f), expected[f], 1e-9 * expected[f])
          << "seed " << seed << " step " << step << " flow " << f;
      if (!changed[f]) {
        ASSERT_EQ(net.rate(f), before[f]) << "unreported change, flow " << f;
      }
      before[f] = net.rate(f);
    }
  }
  // Some solve visited fewer flows than were active: the pruning is exercised.
  EXPECT_TRUE(some_solve_was_local) << "seed " << seed;
}

TEST(FlowNetwork, RandomJoinsAndLeavesMatchAGlobalSolve) {
  for (uint64_t seed = 1; seed <= 12; ++seed) check_against_reference(seed, 12, 40, 150, 3);
}

TEST(FlowNetwork, RandomDenseNetworkMatchesAGlobalSolve) {
  check_against_reference(77, 30, 150, 400, 4);
}

// A chain: flow i crosses links i and i+1, link i has capacity i+1 GB/s.
// Max-min pairs the flows up: (f0, f1) at 1, (f2, f3) at 2, ... Removing f0
// re-pairs every one: (f1, f2) at 1.5, (f3, f4) at 2.5, ... so the change
// ripples to the far end of the chain, and the repair must follow it.
TEST(FlowNetwork, RipplesAlongAChain) {
  constexpr uint32_t kLinks = 40;
  FlowNetwork net;
  for (uint32_t l = 0; l < kLinks; ++l) net.add_link((l + 1) * kG);
  for (uint32_t f = 0; f + 1 < kLinks; ++f) net.add_flow(hops({f, f + 1}), 0);
  for (uint32_t f = 0; f + 1 < kLinks; ++f) net.activate(f);
  net.solve();
  for (uint32_t f = 0; f + 1 < kLinks; ++f) EXPECT_EQ(net.rate(f), (f / 2 + 1) * kG) << f;
  net.deactivate(0);
  EXPECT_EQ(net.solve().size(), kLinks - 2);
  for (uint32_t f = 1; f + 1 < kLinks; ++f) {
    EXPECT_NEAR(net.rate(f), ((f - 1) / 2 + 1.5) * kG, 1e-12 * kG) << f;
  }
}

}  // namespace
}  // namespace podsim::sim
