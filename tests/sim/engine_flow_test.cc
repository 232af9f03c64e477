// Flows under max-min fair sharing. Capacities and sizes are chosen so that
// the hand-computed times are exact in ticks (1 ms = 1e9 ps).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "sim/engine.h"
#include "tests/sim/engine_test_util.h"
#include "tests/sim/max_min_reference.h"

namespace podsim::sim {
namespace {

using reference::reference_finish_s;
using reference::RefFlow;
using testing::kG;
using testing::ps;

constexpr int64_t kUs = 1'000'000;      // ps
constexpr int64_t kMs = 1'000'000'000;  // ps

std::vector<PathHop> path(std::initializer_list<LinkId> links) {
  std::vector<PathHop> hops;
  for (const LinkId link : links) hops.push_back(PathHop{link, 1});
  return hops;
}

TEST(EngineFlow, AloneTakesLatencyPlusBytesOverCapacity) {
  Engine engine;
  const LinkId link = engine.add_link(1 * kG);
  const ActivityId flow = engine.add_flow(1e6, path({link}), ps(1 * kUs));
  const RunResult result = engine.run();
  EXPECT_EQ(engine.start_time(flow), ps(0));
  EXPECT_EQ(engine.finish_time(flow), ps(1 * kUs + 1 * kMs));
  EXPECT_EQ(result.events, 2u);  // joins the sharing, completes
  EXPECT_EQ(engine.kind(flow), ActivityKind::kFlow);
  EXPECT_EQ(engine.link_count(), 1u);
}

TEST(EngineFlow, CompletionRoundsUpToTheTick) {
  Engine engine;
  const LinkId link = engine.add_link(3 * kG);
  const ActivityId flow = engine.add_flow(1000.0, path({link}), ps(0));
  engine.run();
  // 1000 B / 3e9 B/s = 333333.33... ps.
  EXPECT_EQ(engine.finish_time(flow), ps(333'334));
}

TEST(EngineFlow, SeriesLinksRunAtTheSlowest) {
  Engine engine;
  const LinkId fast = engine.add_link(10 * kG);
  const LinkId slow = engine.add_link(2 * kG);
  const ActivityId flow = engine.add_flow(4e6, path({fast, slow}), ps(0));
  engine.run();
  EXPECT_EQ(engine.finish_time(flow), ps(2 * kMs));
}

TEST(EngineFlow, TwoFlowsOnOneLinkEachGetHalf) {
  Engine engine;
  const LinkId link = engine.add_link(1 * kG);
  const ActivityId a = engine.add_flow(1e6, path({link}), ps(0));
  const ActivityId b = engine.add_flow(3e6, path({link}), ps(0));
  engine.run();
  // Both at 0.5 GB/s: a done at 2 ms; b has 2 MB left, alone at 1 GB/s: +2 ms.
  EXPECT_EQ(engine.finish_time(a), ps(2 * kMs));
  EXPECT_EQ(engine.finish_time(b), ps(4 * kMs));
}

TEST(EngineFlow, FlowJoiningMidwayReshares) {
  Engine engine;
  const LinkId link = engine.add_link(1 * kG);
  const ActivityId a = engine.add_flow(1e6, path({link}), ps(0));
  // b's latency elapses before it shares: it joins at 0.5 ms.
  const ActivityId b = engine.add_flow(1e6, path({link}), ps(kMs / 2));
  engine.run();
  // a: 0.5 MB alone by 0.5 ms, then 0.5 MB at 0.5 GB/s: done at 1.5 ms.
  // b: 0.5 MB by 1.5 ms at half rate, then 0.5 MB alone: done at 2.0 ms.
  EXPECT_EQ(engine.finish_time(a), ps(3 * kMs / 2));
  EXPECT_EQ(engine.finish_time(b), ps(2 * kMs));
  EXPECT_EQ(engine.start_time(b), ps(0));
}

TEST(EngineFlow, FlowAfterADelayStartsWhenItEnds) {
  Engine engine;
  const LinkId link = engine.add_link(1 * kG);
  const StreamId stream = engine.add_stream();
  const ActivityId compute = engine.add_delay(ps(3 * kMs), stream);
  const ActivityId send = engine.add_flow(1e6, path({link}), ps(5 * kUs), stream);
  engine.run();
  EXPECT_EQ(engine.start_time(send), ps(3 * kMs));
  EXPECT_EQ(engine.finish_time(send), ps(4 * kMs + 5 * kUs));
  EXPECT_EQ(engine.finish_time(compute), ps(3 * kMs));
}

TEST(EngineFlow, DependentFlowStartsWhenItsPredecessorEnds) {
  // a then b (b waits for a) share the link with c throughout, 1 GB/s:
  // 0-2 ms a, c at 0.5 GB/s (a done; c has 2 MB left); 2-4 ms b, c at
  // 0.5 GB/s (b done; c has 1 MB left); then c alone: done at 5 ms.
  Engine engine;
  const LinkId link = engine.add_link(1 * kG);
  const ActivityId a = engine.add_flow(1e6, path({link}), ps(0));
  const ActivityId b = engine.add_flow(1e6, path({link}), ps(0));
  const ActivityId c = engine.add_flow(3e6, path({link}), ps(0));
  engine.add_dependency(a, b);
  const RunResult result = engine.run();
  EXPECT_EQ(engine.finish_time(a), ps(2 * kMs));
  EXPECT_EQ(engine.start_time(b), ps(2 * kMs));
  EXPECT_EQ(engine.finish_time(b), ps(4 * kMs));
  EXPECT_EQ(engine.finish_time(c), ps(5 * kMs));
  EXPECT_EQ(result.events, 6u);  // each flow: joins the sharing, completes
}

// Three links, five flows with bottlenecks on different links (all in GB/s):
//   L1 = 10: f0, f1, f2     L2 = 6: f0, f2, f4     L3 = 2: f0, f3
// Progressive filling: L3 saturates first at 1 (f0 = f3 = 1); then L2 at
// (6 - 1) / 2 = 2.5 (f2 = f4 = 2.5); then L1 at 10 - 1 - 2.5 = 6.5 (f1).
// Each flow moves rate x 1 ms, so with the right rates all end at 1 ms.
TEST(EngineFlow, ClassicMaxMinExample) {
  Engine engine;
  const LinkId l1 = engine.add_link(10 * kG);
  const LinkId l2 = engine.add_link(6 * kG);
  const LinkId l3 = engine.add_link(2 * kG);
  std::vector<ActivityId> flows;
  flows.push_back(engine.add_flow(1e6, path({l1, l2, l3}), ps(0)));
  flows.push_back(engine.add_flow(6.5e6, path({l1}), ps(0)));
  flows.push_back(engine.add_flow(2.5e6, path({l1, l2}), ps(0)));
  flows.push_back(engine.add_flow(1e6, path({l3}), ps(0)));
  flows.push_back(engine.add_flow(2.5e6, path({l2}), ps(0)));
  const RunResult result = engine.run();
  for (const ActivityId flow : flows) EXPECT_EQ(engine.finish_time(flow), ps(kMs));
  EXPECT_EQ(result.end, ps(kMs));
}

TEST(EngineFlow, MultiplicityEqualsIdenticalFlows) {
  // One flow standing for 3 on a link vs 3 real flows; plus a plain flow each.
  Engine images;
  const LinkId li = images.add_link(4 * kG);
  const std::vector<PathHop> four{PathHop{li, 3}};
  const ActivityId image = images.add_flow(1e6, four, ps(0));
  const ActivityId plain_i = images.add_flow(2e6, path({li}), ps(0));
  images.run();

  Engine real;
  const LinkId lr = real.add_link(4 * kG);
  std::vector<ActivityId> copies;
  for (int i = 0; i < 3; ++i) copies.push_back(real.add_flow(1e6, path({lr}), ps(0)));
  const ActivityId plain_r = real.add_flow(2e6, path({lr}), ps(0));
  real.run();

  // 4 shares of 1 GB/s: the images end at 1 ms; the plain flow then has 1 MB
  // left alone at 4 GB/s: 0.25 ms more.
  EXPECT_EQ(images.finish_time(image), ps(kMs));
  EXPECT_EQ(images.finish_time(plain_i), ps(5 * kMs / 4));
  for (const ActivityId copy : copies) {
    EXPECT_EQ(real.finish_time(copy), images.finish_time(image));
  }
  EXPECT_EQ(real.finish_time(plain_r), images.finish_time(plain_i));
}

TEST(EngineFlow, RateCapLimitsAndLeavesTheRestToOthers) {
  Engine engine;
  const LinkId link = engine.add_link(1 * kG);
  // capped at 0.2 GB/s; the other flow gets the remaining 0.8 GB/s.
  const ActivityId capped = engine.add_flow(4e5, path({link}), ps(0), kNoStream, 0, 0.2 * kG);
  const ActivityId other = engine.add_flow(8e5, path({link}), ps(0));
  // A cap with no link at all.
  const ActivityId cap_only = engine.add_flow(1e6, {}, ps(0), kNoStream, 0, 0.25 * kG);
  engine.run();
  EXPECT_EQ(engine.finish_time(other), ps(kMs));
  EXPECT_EQ(engine.finish_time(capped), ps(2 * kMs));  // the cap still binds when alone
  EXPECT_EQ(engine.finish_time(cap_only), ps(4 * kMs));
}

TEST(EngineFlow, ZeroByteFlowLastsExactlyItsLatency) {
  Engine engine;
  const LinkId link = engine.add_link(1 * kG);
  const ActivityId empty = engine.add_flow(0.0, path({link}), ps(7 * kUs));
  const ActivityId full = engine.add_flow(1e6, path({link}), ps(0));
  engine.run();
  EXPECT_EQ(engine.finish_time(empty), ps(7 * kUs));
  EXPECT_EQ(engine.finish_time(full), ps(kMs));  // never shared with the empty one
}

// 8 hosts under one leaf; host links B = 12.5 GB/s (100 Gb/s); the uplink
// has 8B/7: a 7:1 oversubscription of the 8B the hosts can offer. Eight flows
// leaving through it get 8B/7 / 8 = B/7 each (the host links are not the
// bottleneck), so 7 MB takes 7 MB / (B/7) = 49e6 / 12.5e9 s = 3.92 ms.
TEST(EngineFlow, OversubscribedUplinkSharedByEightHosts) {
  constexpr double kB = 12.5 * kG;
  Engine engine;
  const LinkId uplink = engine.add_link(8.0 * kB / 7.0);
  std::vector<ActivityId> flows;
  for (int h = 0; h < 8; ++h) {
    const LinkId host = engine.add_link(kB);
    flows.push_back(engine.add_flow(7e6, path({host, uplink}), ps(0)));
  }
  engine.run();
  for (const ActivityId flow : flows) EXPECT_EQ(engine.finish_time(flow), ps(3'920'000'000));

  // The same as one flow standing for the 8 symmetric ones on the uplink.
  Engine folded;
  const LinkId up = folded.add_link(8.0 * kB / 7.0);
  const LinkId host = folded.add_link(kB);
  const std::vector<PathHop> hops{PathHop{host, 1}, PathHop{up, 8}};
  const ActivityId image = folded.add_flow(7e6, hops, ps(0));
  folded.run();
  EXPECT_EQ(folded.finish_time(image), ps(3'920'000'000));

  // Without oversubscription (uplink 8B) the host links bind: 7 MB / B = 0.56 ms.
  Engine full;
  const LinkId wide = full.add_link(8.0 * kB);
  std::vector<ActivityId> fast;
  for (int h = 0; h < 8; ++h) {
    const LinkId own = full.add_link(kB);
    fast.push_back(full.add_flow(7e6, path({own, wide}), ps(0)));
  }
  full.run();
  for (const ActivityId flow : fast) EXPECT_EQ(full.finish_time(flow), ps(560'000'000));
}

// ---------------------------------------------------------------------------
// Random scenarios against an independent reference: a global fluid
// simulation in double-precision seconds that recomputes every rate from
// scratch (naive water-filling over all links) at every event.

TEST(EngineFlow, RandomScenariosMatchAGlobalFluidReference) {
  std::mt19937_64 rng(99);
  for (int scenario = 0; scenario < 40; ++scenario) {
    std::uniform_int_distribution<int> nlinks_d(2, 7), nflows_d(2, 14), hops_d(1, 3), mult_d(1, 3),
        cap_pick(1, 5), start_us(0, 400);
    std::uniform_real_distribution<double> bytes_d(1e4, 2e6);
    std::bernoulli_distribution capped_d(0.2), multi_d(0.25);
    const int nlinks = nlinks_d(rng);
    std::vector<double> capacity;
    Engine engine;
    std::vector<LinkId> links;
    for (int l = 0; l < nlinks; ++l) {
      capacity.push_back(cap_pick(rng) * kG);
      links.push_back(engine.add_link(capacity.back()));
    }
    std::uniform_int_distribution<int> link_d(0, nlinks - 1);
    std::vector<RefFlow> flows;
    std::vector<ActivityId> ids;
    const int nflows = nflows_d(rng);
    for (int f = 0; f < nflows; ++f) {
      RefFlow flow{bytes_d(rng), {}, capped_d(rng) ? 0.3 * kG : 0.0, 0.0};
      const int nh = hops_d(rng);
      std::vector<PathHop> hops;
      for (int h = 0; h < nh; ++h) {
        const int l = link_d(rng);
        const int m = multi_d(rng) ? mult_d(rng) : 1;
        flow.hops.emplace_back(l, m);
        hops.push_back(PathHop{links[l], static_cast<uint32_t>(m)});
      }
      const int64_t start = start_us(rng) * kUs;
      flow.start_s = static_cast<double>(start) * 1e-12;
      flows.push_back(flow);
      ids.push_back(engine.add_flow(flow.bytes, hops, ps(start), kNoStream, 0, flow.cap));
    }
    const RunResult result = engine.run();
    ASSERT_TRUE(result.completed());
    const std::vector<double> expected = reference_finish_s(capacity, flows);
    for (int f = 0; f < nflows; ++f) {
      const double got = engine.finish_time(ids[f]).seconds();
      // Ticks round up at each completion: allow a few ps per event.
      EXPECT_NEAR(got, expected[f], 1e-9 * expected[f] + 100e-12)
          << "scenario " << scenario << " flow " << f;
    }
  }
}

// 400 flows join one link 1 us apart: every join and every finish re-rates
// all flows on it, so most completion events go stale (over 10^5 of them,
// which the engine must skip and periodically purge from its queue). Finish
// times must still match the global reference.
TEST(EngineFlow, ManyReratingsMatchTheReference) {
  Engine engine;
  const LinkId link = engine.add_link(10 * kG);
  std::vector<RefFlow> flows;
  std::vector<ActivityId> ids;
  for (int f = 0; f < 400; ++f) {
    const int64_t start = f * kUs;
    RefFlow flow{1e5 + 1e3 * (f % 7), {{0, 1}}, 0.0, static_cast<double>(start) * 1e-12};
    flows.push_back(flow);
    ids.push_back(engine.add_flow(flow.bytes, path({link}), ps(start)));
  }
  const RunResult result = engine.run();
  ASSERT_TRUE(result.completed());
  EXPECT_EQ(result.events, 800u);  // stale completions are not events
  const std::vector<double> expected = reference_finish_s({10 * kG}, flows);
  for (size_t f = 0; f < flows.size(); ++f) {
    const double got = engine.finish_time(ids[f]).seconds();
    EXPECT_NEAR(got, expected[f], 1e-9 * expected[f] + 1e-9) << "flow " << f;
  }
}

}  // namespace
}  // namespace podsim::sim
