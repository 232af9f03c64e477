// Scale-up topologies beyond the NVSwitch crossbar: AMD's Infinity Fabric
// mesh, TPU tori, TPU slices joined over the data-centre network, and the
// collectives that fit each, against their closed forms.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "hwmodels/collectives.h"
#include "hwmodels/fabric.h"
#include "hwmodels/torus.h"
#include "tests/hwmodels/test_specs.h"
#include "tests/hwmodels/test_util.h"

namespace podsim::hwmodels {
namespace {

using testing::has_problem;
using testing::mi300x_mesh;
using testing::tpu_v5p;
using testing::tpu_v6e;

TEST(TorusShape, GooglesSliceShapesUpToAxisOrder) {
  TorusSpec v5p;
  v5p.dims = 3;
  v5p.max_shape = {16, 20, 28};
  EXPECT_EQ(torus_shape(v5p, 4), (std::vector<int>{1, 2, 2}));
  EXPECT_EQ(torus_shape(v5p, 8), (std::vector<int>{2, 2, 2}));
  EXPECT_EQ(torus_shape(v5p, 32), (std::vector<int>{2, 4, 4}));
  EXPECT_EQ(torus_shape(v5p, 128), (std::vector<int>{4, 4, 8}));
  EXPECT_EQ(torus_shape(v5p, 512), (std::vector<int>{8, 8, 8}));
  EXPECT_EQ(torus_shape(v5p, 1536), (std::vector<int>{8, 16, 12}));
  EXPECT_EQ(torus_shape(v5p, 6144), (std::vector<int>{16, 16, 24}));
  EXPECT_TRUE(torus_shape(v5p, 8192).empty());  // 16x16x32 is longer than the pod
  TorusSpec v6e;
  v6e.dims = 2;
  v6e.max_shape = {16, 16};
  EXPECT_EQ(torus_shape(v6e, 8), (std::vector<int>{2, 4}));
  EXPECT_EQ(torus_shape(v6e, 32), (std::vector<int>{4, 8}));
  EXPECT_EQ(torus_shape(v6e, 256), (std::vector<int>{16, 16}));
  EXPECT_TRUE(torus_shape(v6e, 512).empty());
  v6e.shape = {8, 4};
  EXPECT_EQ(torus_shape(v6e, 32), (std::vector<int>{8, 4}));
}

TEST(TorusShape, WrapAroundRules) {
  TorusSpec v5p;
  v5p.wrap_length = 4;
  v5p.wrap_needs_all_axes = true;
  EXPECT_EQ(torus_wraps(v5p, {4, 4, 8}), (std::vector<bool>{true, true, true}));
  EXPECT_EQ(torus_wraps(v5p, {2, 4, 4}), (std::vector<bool>{false, false, false}));
  TorusSpec v6e;
  v6e.wrap_length = 16;
  EXPECT_EQ(torus_wraps(v6e, {8, 16}), (std::vector<bool>{false, true}));
  EXPECT_EQ(torus_wraps(v6e, {16, 16}), (std::vector<bool>{true, true}));
}

TEST(TopologyValidate, SlicesAndShapesNameTheirKeys) {
  EXPECT_TRUE(Fabric::validate(tpu_v5p(16)).empty());
  EXPECT_TRUE(Fabric::validate(tpu_v6e(128, 2)).empty());
  EXPECT_TRUE(Fabric::validate(mi300x_mesh(2)).empty());
  EXPECT_TRUE(has_problem(Fabric::validate(tpu_v6e(128)), "slices"));   // 512 chips in one slice
  EXPECT_TRUE(has_problem(Fabric::validate(tpu_v6e(6, 4)), "slices"));  // 6 hosts, 4 slices
  ClusterSpec c = mi300x_mesh(2);
  c.slices = 2;
  EXPECT_TRUE(has_problem(Fabric::validate(c), "slices"));
  c = mi300x_mesh(2);
  c.scale_up.domain = 16;
  EXPECT_TRUE(has_problem(Fabric::validate(c), "scale_up/domain"));
  c = tpu_v5p(16);
  c.scale_up.torus.shape = {4, 4, 2};
  EXPECT_TRUE(has_problem(Fabric::validate(c), "scale_up/torus/shape"));
  c = tpu_v5p(16);
  c.scale_up.domain = 32;
  EXPECT_TRUE(has_problem(Fabric::validate(c), "scale_up/domain"));
}

TEST(MeshFabric, OneLinkPerOrderedPairAtItsShare) {
  const Fabric f = Fabric::build(mi300x_mesh(1));
  EXPECT_EQ(f.topology(), ScaleUpTopology::kMesh);
  EXPECT_EQ(f.link_count(), 56u);  // 8 x 7, no switch, no network
  for (uint32_t l = 0; l < f.link_count(); ++l) {
    EXPECT_EQ(f.link(l).kind, LinkKind::kMesh);
    EXPECT_DOUBLE_EQ(f.link(l).capacity_bytes_per_s, 48e9);  // 448 / 7 x 0.75
  }
  const FabricPath p = f.path(2, 5);
  ASSERT_EQ(p.links.size(), 1u);
  EXPECT_EQ(f.link(p.links[0]).from, 2u);
  EXPECT_EQ(f.link(p.links[0]).to, 5u);
}

TEST(TorusFabric, LinksWrapWhereTheSliceAllowsAndRoutesAreShortest) {
  // 4x4x4 = one cube: wraps on every axis, 6 links per chip.
  const Fabric cube = Fabric::build(tpu_v5p(16));
  EXPECT_EQ(cube.torus().shape, (std::vector<int>{4, 4, 4}));
  EXPECT_EQ(cube.link_count(), 64u * 6);
  EXPECT_DOUBLE_EQ(cube.link(0).capacity_bytes_per_s, 100e9);
  // 2x4x4 has no wrap: lines of 2, 4, 4 give 2 x (1x16 + 3x8 + 3x8) links.
  const Fabric half = Fabric::build(tpu_v5p(8));
  EXPECT_EQ(half.torus().shape, (std::vector<int>{2, 4, 4}));
  EXPECT_EQ(half.link_count(), 2u * (16 + 24 + 24));
  for (const Fabric* f : {&cube, &half}) {
    for (int64_t a = 0; a < f->gpu_count(); a += 5) {
      for (int64_t b = 0; b < f->gpu_count(); b += 3) {
        EXPECT_EQ(static_cast<int>(f->path(a, b).links.size()), f->bfs_hop_count(a, b))
            << f->torus().shape.size() << " " << a << " -> " << b;
      }
    }
  }
  // Round the wrap: x = 0 to x = 3 is one hop on the cube, three on a line.
  EXPECT_EQ(cube.path(0, 3).links.size(), 1u);
  const Fabric line = Fabric::build(tpu_v6e(4));  // 4x4, no wrap (axes < 16)
  EXPECT_EQ(line.path(0, 3).links.size(), 3u);
  EXPECT_NEAR(cube.path(0, 3).latency_s, 1e-6, 1e-12);
}

TEST(TorusFabric, SlicesAreDomainsJoinedOverTheNetwork) {
  const Fabric f = Fabric::build(tpu_v6e(8, 2));  // 2 slices of 4x4
  EXPECT_EQ(f.domain_size(), 16);
  EXPECT_EQ(f.domain_of(15), 0);
  EXPECT_EQ(f.domain_of(16), 1);
  const FabricPath p = f.path(3, 19);  // the same position in the other slice
  bool crosses_nic = false;
  for (uint32_t l : p.links) crosses_nic = crosses_nic || f.link(l).kind == LinkKind::kNicUp;
  EXPECT_TRUE(crosses_nic);
  EXPECT_NE(f.summary().find("torus slices of 4x4"), std::string::npos) << f.summary();
}

// Acceptance: a torus all-reduce against its closed form per dimension. A
// bidirectional ring round a wrapped axis of n chips moves (n-1)/n S per
// direction of each link in 2 ceil(n/2) steps; on a line (no wrap-around)
// every link carries both rings: 2 (n-1)/n S in 2 (n-1) steps.
TEST(TorusAllReduce, MatchesClosedFormPerDimension) {
  const CollectiveParams p;
  const double S = 256e6;
  const double B = 100e9;
  const double hop = 1e-6;
  const Fabric cube = Fabric::build(tpu_v5p(16));  // 4x4x4, wrapped
  const std::vector<std::vector<int64_t>> axes = {{0, 1, 2, 3}, {0, 4, 8, 12}, {0, 16, 32, 48}};
  for (size_t a = 0; a < axes.size(); ++a) {
    const CollectiveResult r = predict_collective(cube, CollectiveOp::kAllReduce, axes[a], S);
    EXPECT_EQ(r.plan.algorithm, Algorithm::kTorus);
    const double expect = p.ici_base_latency_s + 2 * 2 * hop + 3.0 / 4 * S / B;
    EXPECT_NEAR(r.time_s / expect, 1.0, 1e-3) << "axis " << a;
  }
  const Fabric line = Fabric::build(tpu_v6e(16));  // 8x8: lines
  for (const std::vector<int64_t>& g : {std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7},
                                        std::vector<int64_t>{0, 8, 16, 24, 32, 40, 48, 56}}) {
    const CollectiveResult r = predict_collective(line, CollectiveOp::kAllReduce, g, S);
    const double expect = p.ici_base_latency_s + 2 * 7 * hop + 2 * 7.0 / 8 * S / B;
    EXPECT_NEAR(r.time_s / expect, 1.0, 1e-3);
  }
  // All axes at once: each part starts on its own axis, every link busy:
  // 2 (N-1)/N S / (2 k B) (scaling-book), 21/64 S / B on the cube.
  const CollectiveResult whole =
      predict_collective(cube, CollectiveOp::kAllReduce, gpu_range(0, 64), S);
  const double expect = p.ici_base_latency_s + 3 * 2 * 2 * hop + 2 * 63.0 / 64 * S / (6 * B);
  EXPECT_NEAR(whole.time_s / expect, 1.0, 1e-3);
  EXPECT_LE(whole.plan.flow_count(), 3u * 2 * 4);  // the three lines through chip 0
}

TEST(TorusAllGather, HalfTheAllReduceAndAGroupOffTheGridStillRuns) {
  const Fabric cube = Fabric::build(tpu_v5p(16));
  const std::vector<int64_t> x = {0, 1, 2, 3};
  const double S = 64e6;
  const double ag = predict_collective(cube, CollectiveOp::kAllGather, x, S).time_s;
  const double rs = predict_collective(cube, CollectiveOp::kReduceScatter, x, S).time_s;
  const double ar = predict_collective(cube, CollectiveOp::kAllReduce, x, S).time_s;
  EXPECT_DOUBLE_EQ(ag, rs);
  const CollectiveParams p;
  EXPECT_NEAR((ag - p.ici_base_latency_s) / (ar - p.ici_base_latency_s), 0.5, 1e-6);
  // Not a box (chips 0, 1, 5): one ring in chip order, routed x then y.
  const CollectiveResult odd =
      predict_collective(cube, CollectiveOp::kAllGather, std::vector<int64_t>{0, 1, 5}, S);
  EXPECT_EQ(odd.plan.algorithm, Algorithm::kTorus);
  EXPECT_GT(odd.time_s, 0);
  EXPECT_EQ(kernel_sms(cube, x, p), 0);  // DMA engines, not the matrix units
}

TEST(TorusAllGather, AProductGroupRunsItsSeparableAxisApart) {
  // 6,144-chip v5p slice (16x16x24), TP 8 innermost: an FSDP group of 48 is
  // x in {0, 8} times 24 chips folded over y and z (y 0..15 at z 0, y 0..7 at
  // z 1): a ring along x and one ring over the 24, not one ring of 48.
  const Fabric f = Fabric::build(tpu_v5p(1536));
  ASSERT_EQ(f.torus().shape, (std::vector<int>{16, 16, 24}));
  std::vector<int64_t> group;
  for (int64_t j = 0; j < 48; ++j) group.push_back(8 * j);
  const double S = 1e9;
  const CollectiveResult r = predict_collective(f, CollectiveOp::kAllGather, group, S);
  // Flows: both directions of the 2-ring along x and of the 24-ring.
  EXPECT_EQ(r.plan.flow_count(), 2u + 2 * 24);
  // Part 1 starts on the 24-ring (S/2), part 0 reaches it after x (S/4). The
  // 24 do not close round a wrapped axis, so the ring's last hop runs back
  // along the z = 1 row: those links carry both directions' shares (a line):
  // 2 x 23/24 x (S/2 + S/4) / 2 / link = 23/24 x 3/4 x S / link. The x ring
  // (S/4 + S/96 over 8 hops of its own) finishes first. One ring over all 48
  // on a line would take 2 x 47/48 x S / 2 / link.
  const double link = 100e9;
  const double expect = 23.0 / 24 * 3 / 4 * S / link;
  EXPECT_NEAR(r.time_s - r.plan.phases[0].latency_s, expect, 1e-6 * expect);
  EXPECT_LT(expect, 47.0 / 48 * S / link);
}

// Acceptance: a full-mesh all-to-all uses every link once.
TEST(MeshAllToAll, UsesEveryLinkOnce) {
  const Fabric f = Fabric::build(mi300x_mesh(1));
  const double S = 512e6;
  const CollectiveResult r = predict_collective(f, CollectiveOp::kAllToAll, gpu_range(0, 8), S);
  std::multiset<uint32_t> used;
  for (const Phase& ph : r.plan.phases) {
    for (const Transfer& t : ph.transfers) {
      for (uint32_t l : f.path(t.src, t.dst).links) {
        for (uint32_t i = 0; i < t.multiplicity; ++i) used.insert(l);
      }
      EXPECT_DOUBLE_EQ(t.bytes, S / 8);
    }
  }
  EXPECT_EQ(used.size(), f.link_count());
  for (uint32_t l = 0; l < f.link_count(); ++l) EXPECT_EQ(used.count(l), 1u) << l;
  // Every link busy with S/8 at once: the whole exchange in S/8 / 48 GB/s.
  const double latency = r.plan.phases.front().latency_s;
  EXPECT_NEAR(r.time_s - latency, S / 8 / 48e9, 1e-9);
}

TEST(MeshRing, AllSevenLinksCarryTheRingAsRcclsRingsDo) {
  // RCCL's rings on 8 MI300X load every directed link alike: busbw = 7 x
  // 48 GB/s (measured 316.8 = 94% of it, [S28]); 2 GPUs use one link.
  const Fabric f = Fabric::build(mi300x_mesh(1));
  const double S = 8e9;
  const CollectiveResult eight =
      predict_collective(f, CollectiveOp::kAllReduce, gpu_range(0, 8), S, Algorithm::kAuto,
                         CollectiveParams{}, Protocol::kSimple);
  EXPECT_EQ(eight.plan.algorithm, Algorithm::kRing);
  EXPECT_NEAR(eight.busbw_bytes_per_s / (7 * 48e9), 1.0, 0.01);
  const CollectiveResult two =
      predict_collective(f, CollectiveOp::kAllReduce, std::vector<int64_t>{0, 1}, S,
                         Algorithm::kAuto, CollectiveParams{}, Protocol::kSimple);
  EXPECT_NEAR(two.busbw_bytes_per_s / 48e9, 1.0, 0.01);
  EXPECT_THROW(
      predict_collective(f, CollectiveOp::kAllReduce, gpu_range(0, 8), S, Algorithm::kTree),
      std::invalid_argument);
}

// Acceptance: slices over DCN slow a data-parallel reduction by what the DCN
// rate implies. XLA reduce-scatters in each slice, all-reduces the 1/n_slice
// shard across slices (each chip with its peers at the same position), and
// all-gathers in each slice: the slices add 2 (m-1)/m (S/n_slice) / B_dcn.
TEST(SlicesOverDcn, AddWhatTheDcnRateImplies) {
  const double S = 1e9;
  const double dcn_chip = 100e9 / 8;
  const Fabric one = Fabric::build(tpu_v6e(4));  // one 4x4 slice
  const double in_slice =
      predict_collective(one, CollectiveOp::kReduceScatter, gpu_range(0, 16), S).time_s +
      predict_collective(one, CollectiveOp::kAllGather, gpu_range(0, 16), S).time_s;
  for (const int slices : {2, 4}) {
    const Fabric f = Fabric::build(tpu_v6e(4 * slices, slices));
    const CollectiveResult r =
        predict_collective(f, CollectiveOp::kAllReduce, gpu_range(0, 16 * slices), S);
    EXPECT_EQ(r.plan.algorithm, Algorithm::kHierarchical);
    ASSERT_EQ(r.plan.phases.size(), 3u);
    const double m = slices;
    const double dcn = 2 * (m - 1) / m * (S / 16) / dcn_chip;
    EXPECT_NEAR(r.time_s - in_slice - r.plan.phases[1].latency_s, dcn, 1e-6 * dcn) << slices;
  }
}

TEST(SlicesOverDcn, GathersCrossOnceThenSpreadInside) {
  const double S = 1e9;
  const Fabric two = Fabric::build(tpu_v6e(8, 2));
  const CollectiveResult ag =
      predict_collective(two, CollectiveOp::kAllGather, gpu_range(0, 32), S);
  ASSERT_EQ(ag.plan.phases.size(), 2u);
  EXPECT_EQ(ag.plan.phases[0].name, "inter all-gather");
  const double dcn = 1.0 / 2 * (S / 16) / (100e9 / 8);
  const double inside =
      predict_collective(Fabric::build(tpu_v6e(4)), CollectiveOp::kAllGather, gpu_range(0, 16), S)
          .time_s;
  EXPECT_NEAR(ag.time_s - inside - ag.plan.phases[0].latency_s, dcn, 1e-3 * dcn);
}

}  // namespace
}  // namespace podsim::hwmodels
