#include "hwmodels/fabric.h"

#include <gtest/gtest.h>

#include <map>
#include <stdexcept>
#include <string>

#include "sim/engine.h"
#include "tests/hwmodels/test_specs.h"
#include "tests/hwmodels/test_util.h"

namespace podsim::hwmodels {
namespace {

using testing::dgx_h100;
using testing::has_problem;
using testing::llama3_24k;

// 16 nodes in racks of 2, pods of 4 racks... small copy of the llama3 shape.
ClusterSpec small_llama(double top_oversubscription) {
  ClusterSpec c = llama3_24k(16);
  c.scale_out.tiers = {TierSpec{"rack", 2, 1.0}, TierSpec{"pod", 8, 1.0},
                       TierSpec{"cluster", 0, top_oversubscription}};
  return c;
}

TEST(FabricValidate, AcceptsPresetsAndNamesEachProblem) {
  EXPECT_TRUE(Fabric::validate(dgx_h100(4)).empty());
  EXPECT_TRUE(Fabric::validate(llama3_24k()).empty());

  ClusterSpec c = dgx_h100(4);
  c.scale_out.tiers.clear();
  EXPECT_TRUE(has_problem(Fabric::validate(c), "scale_out/tiers"));

  c = dgx_h100(64);
  c.scale_out.tiers = {TierSpec{"leaf", 32, 1.0}};  // 64 nodes, top joins 32
  EXPECT_TRUE(has_problem(Fabric::validate(c), "scale_out/tiers/0/nodes"));

  c = dgx_h100(4);
  c.scale_out.tiers[0].oversubscription = 2.0;
  EXPECT_TRUE(has_problem(Fabric::validate(c), "scale_out/tiers/0/oversubscription"));

  c = dgx_h100(4);
  c.scale_out.nics_per_node = 3;
  EXPECT_TRUE(has_problem(Fabric::validate(c), "scale_out/nics_per_node"));

  c = small_llama(7);
  c.scale_out.tiers[1].nodes = 5;  // racks of 2 do not nest in groups of 5
  EXPECT_TRUE(has_problem(Fabric::validate(c), "scale_out/tiers/1/nodes"));

  c = dgx_h100(2);
  c.scale_up.efficiency = 1.5;
  EXPECT_TRUE(has_problem(Fabric::validate(c), "scale_up/efficiency"));

  // One node needs no network at all.
  c = dgx_h100(1);
  c.scale_out = ScaleOutSpec{};
  EXPECT_TRUE(Fabric::validate(c).empty());

  c = dgx_h100(2);
  c.scale_out.tiers.clear();
  try {
    Fabric::build(c);
    FAIL() << "expected invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("scale_out/tiers"), std::string::npos) << e.what();
  }
}

TEST(Fabric, DgxCountsAndCapacities) {
  const Fabric f = Fabric::build(dgx_h100(2));
  EXPECT_EQ(f.gpu_count(), 16);
  // 16 GPUs + 2 NVSwitch domains + 16 NICs + 8 rail leaves + 1 spine.
  EXPECT_EQ(f.vertex_count(), 16u + 2 + 16 + 8 + 1);
  // NVLink 2x16, PCIe 2x16, NIC 2x16, leaf<->spine 2x8.
  EXPECT_EQ(f.link_count(), 32u + 32 + 32 + 16);
  EXPECT_EQ(f.node_of(9), 1);
  EXPECT_EQ(f.local_index(9), 1);
  EXPECT_EQ(f.rail_of(9), 1);
  EXPECT_EQ(f.domain_of(9), 1);
  for (uint32_t l = 0; l < f.link_count(); ++l) {
    const FabricLink& k = f.link(l);
    if (k.kind == LinkKind::kNvlinkUp) {
      EXPECT_DOUBLE_EQ(k.capacity_bytes_per_s, 370e9);
    }
    if (k.kind == LinkKind::kNicUp) {
      EXPECT_DOUBLE_EQ(k.capacity_bytes_per_s, 47e9);
    }
    if (k.kind == LinkKind::kPcieUp) {
      EXPECT_FALSE(k.constrained);
    }
    // Leaf uplink: 2 nodes x 1 NIC per rail x 47 GB/s, non-blocking.
    if (k.kind == LinkKind::kTierUp) {
      EXPECT_DOUBLE_EQ(k.capacity_bytes_per_s, 2 * 47e9);
      EXPECT_FALSE(k.constrained);
    }
  }
  EXPECT_NE(f.summary().find("16 GPUs"), std::string::npos);
  EXPECT_NE(f.describe_link(f.path(0, 8).links[1]).find("nic0(node0,rail0) -> leaf0.rail0"),
            std::string::npos)
      << f.describe_link(f.path(0, 8).links[1]);
}

TEST(Fabric, PathsInsideNodeSameRailAndCrossRail) {
  const Fabric f = Fabric::build(dgx_h100(2));
  const FabricPath nv = f.path(0, 3);
  ASSERT_EQ(nv.links.size(), 2u);
  EXPECT_EQ(f.link(nv.links[0]).kind, LinkKind::kNvlinkUp);
  EXPECT_EQ(f.link(nv.links[1]).kind, LinkKind::kNvlinkDown);
  EXPECT_DOUBLE_EQ(nv.latency_s, 1e-6);  // scale_up.latency_s: one hop

  const FabricPath rail = f.path(0, 8);  // rail 0 to rail 0: one leaf switch
  ASSERT_EQ(rail.links.size(), 4u);
  EXPECT_EQ(f.link(rail.links[1]).kind, LinkKind::kNicUp);
  EXPECT_EQ(f.link(rail.links[2]).kind, LinkKind::kNicDown);
  EXPECT_DOUBLE_EQ(rail.latency_s, 1e-6);  // scale_out.latency_s: NIC-switch-NIC

  // Rail 0 to rail 1: PXN over NVLink to GPU 1, then rail 1.
  const FabricPath pxn = f.path(0, 9);
  ASSERT_EQ(pxn.links.size(), 6u);
  EXPECT_EQ(f.link(pxn.links[0]).kind, LinkKind::kNvlinkUp);
  EXPECT_EQ(f.link(pxn.links[1]).to, 1u);  // GPU 1
  EXPECT_EQ(f.vertex(f.link(pxn.links[3]).from).rail, 1);
  EXPECT_TRUE(f.path(5, 5).links.empty());
  EXPECT_THROW(f.path(0, 16), std::out_of_range);

  // In-network endpoints: just the GPU's NVLink port.
  const FabricPath up = f.path(3, kInNetwork);
  ASSERT_EQ(up.links.size(), 1u);
  EXPECT_EQ(f.link(up.links[0]).kind, LinkKind::kNvlinkUp);
  EXPECT_EQ(f.link(f.path(kInNetwork, 3).links[0]).kind, LinkKind::kNvlinkDown);
}

TEST(Fabric, TieredPathsMatchBoostBfsAndLatencyGrowsPerSwitch) {
  const Fabric f = Fabric::build(small_llama(7));
  // Same rack, other rack same pod, other pod.
  const int64_t pairs[][2] = {{0, 8}, {0, 16}, {0, 64}, {3, 127}, {17, 100}};
  for (const auto& [a, b] : pairs) {
    const FabricPath p = f.path(a, b);
    EXPECT_EQ(static_cast<int>(p.links.size()), f.bfs_hop_count(a, b)) << a << "->" << b;
  }
  const double L = 1e-6;
  EXPECT_DOUBLE_EQ(f.path(0, 8).latency_s, L);       // NIC-ToR-NIC
  EXPECT_DOUBLE_EQ(f.path(0, 16).latency_s, 2 * L);  // + ToR-pod-ToR
  EXPECT_DOUBLE_EQ(f.path(0, 64).latency_s, 3 * L);  // + pod-cluster-pod
  EXPECT_EQ(f.path(0, 64).links.size(), 8u);
}

TEST(Fabric, OversubscribedTierCapacityAndPruning) {
  const Fabric f = Fabric::build(small_llama(7));
  int pod_uplinks = 0;
  for (uint32_t l = 0; l < f.link_count(); ++l) {
    const FabricLink& k = f.link(l);
    if (k.kind != LinkKind::kTierUp) continue;
    const int tier = f.vertex(k.from).tier;
    if (tier == 0) {  // rack: 2 nodes x 8 NICs x 47 GB/s at 1:1
      EXPECT_DOUBLE_EQ(k.capacity_bytes_per_s, 16 * 47e9);
      EXPECT_FALSE(k.constrained);
    } else {  // pod of 8 nodes into the 1:7 top tier
      EXPECT_DOUBLE_EQ(k.capacity_bytes_per_s, 64 * 47e9 / 7);
      EXPECT_TRUE(k.constrained);
      ++pod_uplinks;
    }
  }
  EXPECT_EQ(pod_uplinks, 2);
  const Fabric all = Fabric::build(small_llama(7), FabricOptions{false});
  for (uint32_t l = 0; l < all.link_count(); ++l) EXPECT_TRUE(all.link(l).constrained);
}

TEST(Fabric, NicSharingAndSeveralNicsPerGpu) {
  ClusterSpec c = dgx_h100(2);
  c.scale_out.nics_per_node = 2;  // 4 GPUs per NIC
  c.scale_out.rail_optimized = false;
  Fabric f = Fabric::build(c);
  EXPECT_EQ(f.nic_of(3), 0);
  EXPECT_EQ(f.nic_of(4), 1);
  EXPECT_EQ(f.nic_of(12), 3);
  EXPECT_EQ(f.path(1, 9).links.size(), 4u);

  c = dgx_h100(2);
  c.gpus_per_node = 4;
  c.scale_up.domain = 4;
  c.scale_out.nics_per_node = 8;  // 2 NICs per GPU, chosen by hash
  f = Fabric::build(c);
  EXPECT_EQ(f.nic_of(1, 0), 2);
  EXPECT_EQ(f.nic_of(1, 1), 3);
  // GPU 1 (rails 2, 3) to GPU 6 (rails 4, 5): PXN to GPU 2, owner of rail 4.
  const FabricPath p = f.path(1, 6, 0);
  EXPECT_EQ(f.link(p.links[0]).kind, LinkKind::kNvlinkUp);
  EXPECT_EQ(f.link(p.links[1]).to, 2u);
  EXPECT_EQ(f.vertex(f.link(p.links[2]).to).index, 4);  // NIC 4
}

TEST(Fabric, MultiNodeNvlinkDomain) {
  ClusterSpec c = dgx_h100(36);  // 36 nodes of 4 GPUs in two NVL72 racks
  c.gpus_per_node = 4;
  c.scale_up.domain = 72;
  c.scale_out.nics_per_node = 4;
  c.scale_out.tiers = {TierSpec{"leaf", 18, 1.0}, TierSpec{"spine", 0, 1.0}};
  const Fabric f = Fabric::build(c);
  EXPECT_EQ(f.domain_of(71), 0);
  EXPECT_EQ(f.domain_of(72), 1);
  EXPECT_EQ(f.path(0, 70).links.size(), 2u);  // other node, same NVLink domain
  EXPECT_EQ(f.link(f.path(0, 72).links[0]).kind, LinkKind::kPcieUp);  // next rack: network
}

TEST(Fabric, Llama24kBuildsWithExpectedShape) {
  const Fabric f = Fabric::build(llama3_24k());
  EXPECT_EQ(f.gpu_count(), 24576);
  // GPUs + 3072 NVSwitch + 24576 NICs + 1536 racks + 8 pods + 1 cluster.
  EXPECT_EQ(f.vertex_count(), 24576u + 3072 + 24576 + 1536 + 8 + 1);
  EXPECT_EQ(f.link_count(), 2u * (24576 + 24576 + 24576 + 1536 + 8));
  EXPECT_EQ(f.path(0, 24575).links.size(), 8u);
}

// Links by what they join, so a fabric built for the first GPUs can be
// compared with the whole one.
std::map<std::string, double> capacities_by_name(const Fabric& f) {
  std::map<std::string, double> out;
  for (uint32_t l = 0; l < f.link_count(); ++l) {
    out[f.vertex_name(f.link(l).from) + " -> " + f.vertex_name(f.link(l).to)] =
        f.link(l).capacity_bytes_per_s;
  }
  return out;
}

TEST(Fabric, BuiltForTheJobsGpusHasTheWholeClustersCapacities) {
  // 19 nodes: racks of 2 (the last rack holds one node), pods of 8 (the last
  // pod three), 1:7 above the pods. Every link the first GPUs' fabric has
  // must carry what it carries in the whole cluster, a pod uplink counting
  // every node of its pod, built or not.
  ClusterSpec c = small_llama(7);
  c.nodes = 19;
  const std::map<std::string, double> whole = capacities_by_name(Fabric::build(c));
  for (const int64_t gpus : {1, 8, 9, 24, 72, 130, 152}) {
    FabricOptions options;
    options.gpus = gpus;
    const Fabric part = Fabric::build(c, options);
    EXPECT_EQ(part.gpu_count(), (gpus + 7) / 8 * 8) << gpus;
    for (const auto& [name, capacity] : capacities_by_name(part)) {
      ASSERT_TRUE(whole.contains(name)) << gpus << ": " << name;
      EXPECT_EQ(capacity, whole.at(name)) << gpus << ": " << name;  // bit for bit
    }
  }
}

TEST(Fabric, TenMillionNodesCostAnEightGpuJobNothing) {
  FabricOptions options;
  options.gpus = 8;
  const Fabric f = Fabric::build(dgx_h100(10'000'000), options);
  EXPECT_EQ(f.gpu_count(), 8);
  EXPECT_LT(f.vertex_count(), 100u);  // 8 GPUs, a switch, 8 NICs, 8 rails, a spine
  EXPECT_EQ(f.spec().nodes, 10'000'000);
  // A domain spanning nodes is built whole.
  ClusterSpec nvl = dgx_h100(64);
  nvl.scale_up.domain = 32;
  EXPECT_EQ(Fabric::build(nvl, options).gpu_count(), 32);
}

TEST(FabricValidate, LinksSlowerThanAByteASecondAreProblems) {
  ClusterSpec c = dgx_h100(2);
  c.scale_out.nic_bw_bytes_per_s = 5e-324;  // in (0, 1 PB/s], times 0.5 is 0
  c.scale_out.efficiency = 0.5;
  EXPECT_TRUE(has_problem(Fabric::validate(c), "scale_out/nic_bandwidth"));
  c = dgx_h100(2);
  c.scale_up.efficiency = 1e-320;
  EXPECT_TRUE(has_problem(Fabric::validate(c), "scale_up/bandwidth"));
  c = small_llama(1000);  // 8 nodes of 8 NICs / 1000 is well above 1 B/s
  EXPECT_TRUE(Fabric::validate(c).empty());
  c.scale_out.nic_bw_bytes_per_s = 10;  // one NIC's 9.4 B/s / 1000 is not
  EXPECT_TRUE(has_problem(Fabric::validate(c), "scale_out/tiers/2/oversubscription"));
}

TEST(FabricValidate, AFabricTooLargeToBuildIsAProblemNotAnAllocation) {
  ClusterSpec c = dgx_h100(10'000'000);
  c.scale_out.nics_per_node = 1024;
  EXPECT_TRUE(has_problem(Fabric::validate(c), ""));
  FabricOptions options;
  options.gpus = 64;
  EXPECT_TRUE(Fabric::validate(c, options).empty());
}

TEST(FabricInstance, EngineLinksOnlyForConstrainedLinksAndOnlyOnceRouted) {
  const Fabric f = Fabric::build(small_llama(7));
  sim::Engine engine;
  const FabricInstance inst = f.instantiate(engine);
  for (uint32_t l = 0; l < f.link_count(); ++l) {
    EXPECT_EQ(inst.has_engine_link(l), f.link(l).constrained);
  }
  // Nothing is added before a route needs it: a collective priced alone on
  // a fabric of millions of links gets the few dozen it crosses.
  EXPECT_EQ(engine.link_count(), 0u);
  // Cross-pod: 8 links, of which NIC up/down and the two pod links bind.
  const Route r = inst.route(0, 64);
  EXPECT_EQ(r.hops.size(), 4u);
  EXPECT_DOUBLE_EQ(r.latency_s, 3e-6);
  EXPECT_EQ(engine.link_count(), 4u);
  const Route again = inst.route(0, 64);
  EXPECT_EQ(engine.link_count(), 4u);
  for (size_t h = 0; h < r.hops.size(); ++h) EXPECT_EQ(again.hops[h].link, r.hops[h].link);
  EXPECT_THROW(inst.engine_link(f.path(0, 64).links[0]), std::invalid_argument);
}

TEST(FabricInstance, ADegradedLinkGetsAnEngineLinkWhenFirstRouted) {
  // A PCIe link is never a bottleneck healthy; at half its capacity it may be.
  const Fabric f = Fabric::build(small_llama(7));
  const uint32_t pcie = f.path(0, 64).links[0];
  ASSERT_FALSE(f.link(pcie).constrained);
  std::vector<double> factor(f.link_count(), 1.0);
  factor[pcie] = 0.5;
  sim::Engine engine;
  const FabricInstance inst = f.instantiate(engine, factor);
  EXPECT_TRUE(inst.has_engine_link(pcie));
  EXPECT_EQ(engine.link_count(), 0u);
  EXPECT_EQ(inst.route(0, 64).hops.size(), 5u);  // the 4 constrained links and the PCIe one
  EXPECT_EQ(engine.link_count(), 5u);
}

// Every GPU of pod 0 sends to its twin in pod 1 through the 1:7 top tier: the
// pod uplink carries 64 flows over 64 x 47/7 GB/s, so each flow gets 1/7 of
// its NIC, and pruning the never-binding links changes nothing.
TEST(FabricInstance, OversubscriptionGivesOneSeventhWhenAllHostsSend) {
  for (bool prune : {true, false}) {
    const Fabric f = Fabric::build(small_llama(7), FabricOptions{prune});
    sim::Engine engine;
    const FabricInstance inst = f.instantiate(engine);
    std::vector<sim::ActivityId> flows;
    const double bytes = 1e9;
    for (int64_t g = 0; g < 64; ++g) {
      const Route r = inst.route(g, g + 64);
      flows.push_back(engine.add_flow(bytes, r.hops, sim::Time::from_seconds_ceil(r.latency_s)));
    }
    ASSERT_TRUE(engine.run().completed());
    const double expect = 3e-6 + bytes / (47e9 / 7);
    for (sim::ActivityId a : flows) {
      EXPECT_NEAR(engine.finish_time(a).seconds(), expect, expect * 1e-9) << "prune " << prune;
    }
  }
  // At 1:1 the same traffic runs at the full NIC rate.
  const Fabric f = Fabric::build(small_llama(1));
  sim::Engine engine;
  const FabricInstance inst = f.instantiate(engine);
  const Route r = inst.route(0, 64);
  const sim::ActivityId a = engine.add_flow(1e9, r.hops, sim::Time::from_seconds_ceil(3e-6));
  for (int64_t g = 1; g < 64; ++g) {
    engine.add_flow(1e9, inst.route(g, g + 64).hops, sim::Time::from_seconds_ceil(3e-6));
  }
  ASSERT_TRUE(engine.run().completed());
  EXPECT_NEAR(engine.finish_time(a).seconds(), 3e-6 + 1e9 / 47e9, 1e-9);
}

}  // namespace
}  // namespace podsim::hwmodels
