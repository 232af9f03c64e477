// The max-min solver on its own: rates are checked directly.
#include "sim/flow_network.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace podsim::sim {
namespace {

constexpr double kG = 1e9;

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
  EXPECT_EQ(net.last_component_flows(), 2u);  // b's component was not visited
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
  EXPECT_EQ(net.last_component_flows(), 3u);
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

}  // namespace
}  // namespace podsim::sim
