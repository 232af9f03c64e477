#include "strategies/pipeline_layout.h"

#include <gtest/gtest.h>

#include "strategies/job.h"
#include "strategies/schedule.h"
#include "tests/strategies/test_util.h"

namespace podsim::strategies {
namespace {

TEST(PipelineLayout, MegatronStringsExpandToChunks) {
  // The Megatron-LM GB200 write-up's DeepSeek-V3 layout: embedding + 1
  // layer, 30 stages of 2, the loss alone (32 chunks, 61 layers).
  const ParsedLayout a = parse_pipeline_layout("Et|(tt|)*30L");
  ASSERT_TRUE(a.error.empty()) << a.error;
  ASSERT_EQ(a.chunks.size(), 32u);
  EXPECT_EQ(a.chunks.front(), (ChunkLayout{1, true, 0, false}));
  EXPECT_EQ(a.chunks[1], (ChunkLayout{2, false, 0, false}));
  EXPECT_EQ(a.chunks.back(), (ChunkLayout{0, false, 0, true}));
  // Megatron-Bridge's (16,1) map with the MTP module on the last stage.
  const ParsedLayout b = parse_pipeline_layout("Et*4|(t*4|)*14tmL");
  ASSERT_TRUE(b.error.empty()) << b.error;
  ASSERT_EQ(b.chunks.size(), 16u);
  EXPECT_EQ(b.chunks.front().layers, 4);
  EXPECT_EQ(b.chunks.back(), (ChunkLayout{1, false, 1, true}));
  int64_t layers = 0;
  for (const ChunkLayout& c : b.chunks) layers += c.layers;
  EXPECT_EQ(layers, 61);
}

TEST(PipelineLayout, BadStringsSayWhy) {
  EXPECT_NE(parse_pipeline_layout("Et|x|L").error.find("unknown symbol 'x'"), std::string::npos);
  EXPECT_NE(parse_pipeline_layout("E(tt|L").error.find("missing ')'"), std::string::npos);
  EXPECT_NE(parse_pipeline_layout("Et*|L").error.find("count"), std::string::npos);
  EXPECT_NE(parse_pipeline_layout("EtLt").error.find("after"), std::string::npos);
  EXPECT_FALSE(parse_pipeline_layout("(t*1000000)*1000").error.empty());
}

TEST(PipelineLayout, PlacesLayersAndEndsOnTheChunks) {
  Job job = testing::preset_job("llama3-8b", 4096, 64);
  job.model.layers = 7;
  job.plan.pp = 4;
  job.plan.layout = parse_pipeline_layout("E|ttt|tttt|L").chunks;
  ASSERT_TRUE(validate(job).empty());
  EXPECT_EQ(chunk_layer_counts(job), (std::vector<int64_t>{0, 3, 4, 0}));
  EXPECT_TRUE(stage_chunks(job, 0).front().has_embedding);
  EXPECT_EQ(stage_chunks(job, 0).front().layers(), 0);
  EXPECT_TRUE(stage_chunks(job, 3).front().has_head);
  // Counting: every layer once, the ends where they belong.
  job.plan.layout = parse_pipeline_layout("E|ttt|ttt|L").chunks;
  EXPECT_FALSE(validate(job).empty());
  job.plan.layout = parse_pipeline_layout("tttt|ttt|L|E").chunks;
  EXPECT_FALSE(validate(job).empty());
  // The array form: counts per chunk, the ends on the first and last.
  job.plan.layout = layout_from_counts({1, 2, 2, 2}, 0);
  EXPECT_TRUE(validate(job).empty());
  const BuildResult built = build_schedule(job, Scope::kRepresentatives);
  EXPECT_TRUE(built.schedule.has_value());
}

}  // namespace
}  // namespace podsim::strategies
