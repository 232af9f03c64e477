#include "strategies/layout.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "strategies/job.h"
#include "tests/strategies/test_util.h"

namespace podsim::strategies {
namespace {

ParallelPlan plan(int64_t tp, int64_t cp, int64_t dp, int64_t pp, int64_t ep = 1) {
  ParallelPlan p;
  p.tp = tp;
  p.cp = cp;
  p.dp = dp;
  p.pp = pp;
  p.ep = ep;
  return p;
}

TEST(Layout, DefaultOrderIsTpInnermostPpOutermost) {
  const Layout l(plan(8, 2, 4, 3));
  EXPECT_EQ(l.world(), 8 * 2 * 4 * 3);
  // rank = tp + 8 * (cp + 2 * (dp + 4 * pp))
  const Coords c = l.coords(8 * (1 + 2 * (3 + 4 * 2)) + 5);
  EXPECT_EQ(c.tp, 5);
  EXPECT_EQ(c.cp, 1);
  EXPECT_EQ(c.dp, 3);
  EXPECT_EQ(c.pp, 2);
  for (int64_t r = 0; r < l.world(); ++r) EXPECT_EQ(l.rank(l.coords(r)), r);
  EXPECT_EQ(l.group(13, GroupKind::kTp), (std::vector<int64_t>{8, 9, 10, 11, 12, 13, 14, 15}));
  EXPECT_EQ(l.group(0, GroupKind::kPp), (std::vector<int64_t>{0, 64, 128}));
  EXPECT_EQ(l.group(0, GroupKind::kDp), (std::vector<int64_t>{0, 16, 32, 48}));
  EXPECT_EQ(l.group(0, GroupKind::kDpCp).size(), 8u);
  EXPECT_EQ(l.representative(2), 128);
}

TEST(Layout, CustomOrderPutsDpOutermost) {
  // Llama 3: [TP, CP, PP, DP] innermost to outermost.
  ParallelPlan p = plan(8, 1, 4, 16);
  p.order = {Dim::kTp, Dim::kCp, Dim::kEp, Dim::kPp, Dim::kDp};
  const Layout l(p);
  EXPECT_EQ(l.group(0, GroupKind::kPp)[1], 8);
  EXPECT_EQ(l.group(0, GroupKind::kDp)[1], 8 * 16);
  for (int64_t r = 0; r < l.world(); ++r) EXPECT_EQ(l.rank(l.coords(r)), r);
}

TEST(Layout, GroupsPartitionTheRanks) {
  ParallelPlan p = plan(2, 2, 4, 2, 4);
  p.shard_group = 4;
  p.expert_tp = 2;
  const Layout l(p);
  for (GroupKind kind :
       {GroupKind::kTp, GroupKind::kCp, GroupKind::kDp, GroupKind::kDpCp, GroupKind::kEp,
        GroupKind::kExpertDp, GroupKind::kPp, GroupKind::kShard, GroupKind::kReplica,
        GroupKind::kExpertTp, GroupKind::kExpertTpEp, GroupKind::kStage}) {
    std::set<int64_t> seen;
    std::set<std::vector<int64_t>> groups;
    for (int64_t r = 0; r < l.world(); ++r) {
      const std::vector<int64_t> g = l.group(r, kind);
      EXPECT_EQ(static_cast<int64_t>(g.size()), l.group_size(kind));
      EXPECT_NE(std::find(g.begin(), g.end(), r), g.end());
      groups.insert(g);
    }
    for (const auto& g : groups) {
      for (int64_t r : g) EXPECT_TRUE(seen.insert(r).second) << "rank in two groups";
    }
    EXPECT_EQ(static_cast<int64_t>(seen.size()), l.world());
  }
}

TEST(Layout, ExpertParallelIsCarvedFromDataAndContextRanksWhenExpertTpIsTp) {
  // tp 2, cp 2, dp 4, ep 4 with expert_tp = tp (the 1.0 rule): the 8 dp x cp
  // ranks of a (tp, pp) position split into 2 EP groups of 4 consecutive
  // data-parallel indices (cp innermost).
  ParallelPlan p = plan(2, 2, 4, 1, 4);
  p.expert_tp = 2;
  const Layout l(p);
  EXPECT_EQ(l.group(0, GroupKind::kEp), (std::vector<int64_t>{0, 2, 4, 6}));
  EXPECT_EQ(l.group(0, GroupKind::kExpertDp), (std::vector<int64_t>{0, 8}));
  EXPECT_EQ(l.group(1, GroupKind::kEp), (std::vector<int64_t>{1, 3, 5, 7}));
  EXPECT_EQ(l.group(1, GroupKind::kExpertTp), l.group(1, GroupKind::kTp));
  EXPECT_EQ(l.coords(6).ep, 3);
  EXPECT_EQ(l.coords(8).edp, 1);
}

TEST(Layout, FoldingRegroupsAStageAsExpertTpEpExpertDp) {
  // Megatron-Core's expert RankGenerator (tp = expert_tp, cp = 1, dp =
  // world / (expert_tp ep pp)) over the same ranks: with expert_tp 1 the EP
  // group of tp 2, ep 4 takes 4 consecutive ranks, TP peers included.
  const Layout l(plan(2, 2, 4, 2, 4));
  EXPECT_EQ(l.group(0, GroupKind::kEp), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(l.group(5, GroupKind::kExpertDp), (std::vector<int64_t>{1, 5, 9, 13}));
  EXPECT_EQ(l.group(16 + 6, GroupKind::kEp), (std::vector<int64_t>{20, 21, 22, 23}));
  EXPECT_EQ(l.group_size(GroupKind::kExpertDp), 4);
  ParallelPlan folded = plan(2, 2, 4, 1, 4);
  folded.expert_tp = 4;  // 16 ranks = expert_tp 4 x ep 4
  const Layout f(folded);
  EXPECT_EQ(f.group(5, GroupKind::kExpertTp), (std::vector<int64_t>{4, 5, 6, 7}));
  EXPECT_EQ(f.group(5, GroupKind::kEp), (std::vector<int64_t>{1, 5, 9, 13}));
  EXPECT_EQ(f.group_size(GroupKind::kExpertDp), 1);
  EXPECT_EQ(f.group(5, GroupKind::kExpertTpEp).size(), 16u);
}

TEST(Layout, HsdpShardsInsideReplicasAcross) {
  ParallelPlan p = plan(1, 1, 8, 1);
  p.shard_group = 4;
  const Layout l(p);
  EXPECT_EQ(l.group(5, GroupKind::kShard), (std::vector<int64_t>{4, 5, 6, 7}));
  EXPECT_EQ(l.group(5, GroupKind::kReplica), (std::vector<int64_t>{1, 5}));
}

/// Layout::distinct_shifts by brute force: the image of `ranks` under every
/// shift, kept where it is new.
std::vector<int64_t> distinct_shifts_by_images(const Layout& l, const std::vector<int64_t>& ranks) {
  std::vector<int64_t> out;
  std::set<std::vector<int64_t>> seen;
  for (int64_t shift = 0; shift < l.shift_count(); ++shift) {
    std::vector<int64_t> image;
    for (const int64_t r : ranks) image.push_back(l.shifted(r, shift));
    std::sort(image.begin(), image.end());
    if (seen.insert(image).second) out.push_back(shift);
  }
  return out;
}

TEST(Layout, ShiftsMoveTpCpDpModuloTheirSizes) {
  const Layout l(plan(4, 2, 3, 2));
  EXPECT_EQ(l.shift_count(), 24);
  const int64_t rank = l.rank({3, 1, 0, 2, 1, 0, 0});
  // (dtp, dcp, ddp) = (2, 1, 2): shift 2 + 4 * (1 + 2 * 2) = 22.
  EXPECT_EQ(l.coords(l.shifted(rank, 22)).tp, 1);
  EXPECT_EQ(l.coords(l.shifted(rank, 22)).cp, 0);
  EXPECT_EQ(l.coords(l.shifted(rank, 22)).dp, 1);
  EXPECT_EQ(l.coords(l.shifted(rank, 22)).pp, 1);
  EXPECT_EQ(l.shifted(rank, 0), rank);
}

TEST(Layout, DistinctShiftsAreTheFirstShiftOfEachImage) {
  // Every group kind of every rank, pipeline pairs, and sets with no
  // symmetry or a partial one, on plans with and without folding.
  ParallelPlan hsdp = plan(2, 2, 6, 3, 4);
  hsdp.shard_group = 4;
  hsdp.expert_tp = 2;
  ParallelPlan dp_outer = plan(4, 1, 6, 2);
  dp_outer.order = {Dim::kTp, Dim::kCp, Dim::kEp, Dim::kPp, Dim::kDp};
  for (const ParallelPlan& p : {hsdp, plan(2, 2, 4, 2, 4), dp_outer, plan(1, 1, 12, 1)}) {
    const Layout l(p);
    std::vector<std::vector<int64_t>> sets;
    for (int64_t r = 0; r < l.world(); ++r) {
      for (int k = 0; k < kGroupKinds; ++k) sets.push_back(l.group(r, static_cast<GroupKind>(k)));
      sets.push_back({r, l.on_stage(r, l.world() / l.shift_count() - 1)});
    }
    sets.push_back({0, 1, 5});
    sets.push_back({3, 3, 4});
    for (const std::vector<int64_t>& ranks : sets) {
      EXPECT_EQ(l.distinct_shifts(ranks), distinct_shifts_by_images(l, ranks));
    }
  }
  // The data-parallel group of a 12-way dp plan is its own image under
  // every dp shift: one image per tp shift.
  const Layout l(plan(2, 1, 12, 1));
  EXPECT_EQ(l.distinct_shifts(l.group(0, GroupKind::kDp)), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(l.distinct_shifts({0}).size(), 24u);
}

TEST(Layers, UnevenStagesLightenTheEnds) {
  // Llama 3 405B: 126 layers on 16 stages, one fewer on the first and last.
  Job job = testing::preset_job("llama3-405b", 8192, 16);
  job.plan.pp = 16;
  std::vector<int64_t> expected(16, 8);
  expected.front() = expected.back() = 7;
  EXPECT_EQ(chunk_layer_counts(job), expected);
  // With 2 virtual stages: 32 chunks of 4, the first and last model chunks 3.
  job.plan.virtual_stages = 2;
  job.plan.schedule = PipelineSchedule::kInterleavedOneFOneB;
  const std::vector<int64_t> v2 = chunk_layer_counts(job);
  EXPECT_EQ(v2.front(), 3);
  EXPECT_EQ(v2.back(), 3);
  EXPECT_EQ(std::count(v2.begin(), v2.end(), 4), 30);
  // The first model chunk (embedding) is on stage 0, the last (head) on 15.
  EXPECT_TRUE(stage_chunks(job, 0).front().has_embedding);
  EXPECT_TRUE(stage_chunks(job, 15).back().has_head);
  EXPECT_EQ(stage_chunks(job, 15).back().layer_end, 126);
  // 5 surplus layers on 8 chunks: first, last, second, second-to-last, third.
  job.model.layers = 27;
  job.plan.pp = 8;
  job.plan.virtual_stages = 1;
  EXPECT_EQ(chunk_layer_counts(job), (std::vector<int64_t>{3, 3, 3, 4, 4, 4, 3, 3}));
}

TEST(Layers, StageChunksAreTheModelChunksOfTheirStage) {
  // stage_chunks builds only its stage's chunks; they must be model_chunks'
  // of that stage, in virtual order, covering every layer once.
  Job job = testing::preset_job("llama3-405b", 8192, 16);
  job.plan.pp = 16;
  for (const int64_t v : {1, 2, 4}) {
    job.plan.virtual_stages = v;
    job.plan.schedule =
        v > 1 ? PipelineSchedule::kInterleavedOneFOneB : PipelineSchedule::kOneFOneB;
    const std::vector<ChunkInfo> all = model_chunks(job);
    int64_t layers = 0;
    for (int64_t s = 0; s < job.plan.pp; ++s) {
      const std::vector<ChunkInfo> mine = stage_chunks(job, s);
      ASSERT_EQ(static_cast<int64_t>(mine.size()), v);
      for (int64_t i = 0; i < v; ++i) {
        const ChunkInfo& c = mine[static_cast<size_t>(i)];
        const ChunkInfo& expected = all[static_cast<size_t>(i * job.plan.pp + s)];
        EXPECT_EQ(c.model_chunk, expected.model_chunk);
        EXPECT_EQ(c.stage, s);
        EXPECT_EQ(c.virtual_index, i);
        EXPECT_EQ(c.layer_begin, expected.layer_begin);
        EXPECT_EQ(c.layer_end, expected.layer_end);
        EXPECT_EQ(c.has_embedding, expected.has_embedding);
        EXPECT_EQ(c.has_head, expected.has_head);
        layers += c.layer_end - c.layer_begin;
      }
    }
    EXPECT_EQ(layers, job.model.layers) << "v " << v;
  }
}

TEST(Validate, VirtualStagesNeedPipelineParallelism) {
  // With pp = 1 the chunks would send to their own GPU ("GPU 0 appears
  // twice in the group" deep in the collective planner).
  Job job = testing::preset_job("llama3-8b", 4096, 8);
  job.plan.schedule = PipelineSchedule::kInterleavedOneFOneB;
  job.plan.virtual_stages = 3;
  const std::vector<PlanProblem> problems = validate(job);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].path, "/parallelism/pipeline/virtual_stages");
  EXPECT_NE(problems[0].message.find("pp > 1"), std::string::npos) << problems[0].message;
  job.plan.virtual_stages = 1;  // interleaved with one chunk: a plain sequence
  EXPECT_TRUE(validate(job).empty());
}

TEST(Validate, NamesThePathOfEachProblem) {
  Job job = testing::preset_job("llama3-70b", 8192, 30);
  job.plan.tp = 3;               // does not divide 64 heads
  job.plan.dp = 4;               // 30 % 4 != 0
  job.plan.ep = 2;               // no moe
  job.plan.virtual_stages = 2;   // not interleaved
  job.plan.order[0] = Dim::kPp;  // pp twice
  const std::vector<PlanProblem> problems = validate(job);
  std::set<std::string> paths;
  for (const PlanProblem& p : problems) paths.insert(p.path);
  EXPECT_TRUE(paths.count("/parallelism/tp"));
  EXPECT_TRUE(paths.count("/training/global_batch"));
  EXPECT_TRUE(paths.count("/parallelism/ep"));
  EXPECT_TRUE(paths.count("/parallelism/pipeline/virtual_stages"));
  EXPECT_TRUE(paths.count("/parallelism/order"));
  for (const PlanProblem& p : problems) EXPECT_FALSE(p.message.empty());

  Job ok = testing::preset_job("llama3-405b", 131072, 128);
  ok.plan = {};
  ok.plan.dp = 8;
  ok.plan.tp = 8;
  ok.plan.pp = 16;
  ok.plan.cp = 16;
  ok.plan.sequence_parallel = true;
  ok.plan.schedule = PipelineSchedule::kInterleavedOneFOneB;
  ok.plan.virtual_stages = 2;
  ok.plan.context = ContextAlgorithm::kAllGather;
  EXPECT_TRUE(validate(ok).empty());
  ok.options.flash_attention = false;
  ASSERT_EQ(validate(ok).size(), 1u);
  EXPECT_EQ(validate(ok)[0].path, "/options/flash_attention");
  ok.options.flash_attention = true;
  ok.training.global_batch = 8 * 24;  // 24 micro-batches, not a multiple of pp=16
  ASSERT_EQ(validate(ok).size(), 1u);
  EXPECT_EQ(validate(ok)[0].path, "/training/global_batch");
}

}  // namespace
}  // namespace podsim::strategies
