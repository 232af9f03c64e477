// Mixture of experts at frontier scale: layer kinds, the MoE block's work
// against a dense layer, load imbalance, MoE parallel folding, MLA and
// sliding-window attention.
#include <gtest/gtest.h>

#include <cmath>

#include "strategies/model_counts.h"
#include "strategies/moe_imbalance.h"
#include "strategies/workload.h"
#include "tests/strategies/test_util.h"

namespace podsim::strategies {
namespace {

using testing::preset_job;

struct GemmFlops {
  double hardware = 0, model = 0;
};
/// GEMM FLOPs of the ops `take` accepts (one instance each x count).
template <typename Take>
GemmFlops gemm_flops(const std::vector<Op>& ops, Take take) {
  GemmFlops f;
  for (const Op& op : ops) {
    if (op.kind != OpKind::kGemm || !take(op)) continue;
    f.hardware += static_cast<double>(op.count) * op.flops;
    f.model += static_cast<double>(op.count) * op.model_flops;
  }
  return f;
}

TEST(MoeLayers, DenseLayersAndInterleavingPickTheMoeLayers) {
  const ModelShape dsv3 = *testing::model_preset("deepseek-v3");
  EXPECT_FALSE(is_moe_layer(dsv3, 0));
  EXPECT_FALSE(is_moe_layer(dsv3, 2));
  EXPECT_TRUE(is_moe_layer(dsv3, 3));
  EXPECT_TRUE(is_moe_layer(dsv3, 60));
  EXPECT_EQ(dense_layer_count(dsv3), 3);
  // Llama 4 Maverick (HF moe_layers = range(step - 1, L, step)): odd layers.
  ModelShape maverick = dsv3;
  maverick.moe->dense_layers = 0;
  maverick.moe->interleave_step = 2;
  maverick.layers = 48;
  EXPECT_FALSE(is_moe_layer(maverick, 0));
  EXPECT_TRUE(is_moe_layer(maverick, 1));
  EXPECT_TRUE(is_moe_layer(maverick, 47));
  EXPECT_EQ(dense_layer_count(maverick), 24);
  // gpt-oss: layer 0 sliding, layer 1 full.
  const ModelShape oss = *testing::model_preset("gpt-oss-120b");
  EXPECT_TRUE(is_sliding_layer(oss, 0));
  EXPECT_FALSE(is_sliding_layer(oss, 1));
}

TEST(MoeLayers, ChunksRunTheirLayerKindsInOrder) {
  Job job = preset_job("deepseek-v3", 4096, 64);
  job.plan.pp = 8;  // 7, 8 x 6, 6 layers
  const ChunkInfo first = stage_chunks(job, 0).front();
  const std::vector<LayerRun> runs = layer_runs(job, first, first.layer_begin, first.layer_end);
  ASSERT_EQ(runs.size(), 2u);  // 3 dense layers, then MoE
  EXPECT_FALSE(runs[0].kind.moe);
  EXPECT_EQ(runs[0].count, 3);
  EXPECT_TRUE(runs[1].kind.moe);
  // The MTP module sits with the head on the last chunk by default.
  EXPECT_EQ(stage_chunks(job, 7).back().mtp, 1);
  EXPECT_EQ(stage_chunks(job, 0).front().mtp, 0);
  // recompute_layers: the first layer of every chunk recomputes in full.
  job.plan.recompute.full_layers = 1;
  const std::vector<LayerRun> r1 = layer_runs(job, first, first.layer_begin, first.layer_end);
  EXPECT_TRUE(r1.front().kind.full_recompute);
  EXPECT_EQ(r1.front().count, 1);
  EXPECT_EQ(layer_ops(job, r1.front().kind, Pass::kRecompute).size(),
            layer_ops(job, r1.front().kind, Pass::kForward).size());
  EXPECT_TRUE(layer_ops(job, r1.back().kind, Pass::kRecompute).empty());
}

// The acceptance test: with one expert per rank and every expert
// evenly loaded, the routed experts do the FLOPs of a dense MLP as wide as
// the experts a token is routed to (top_k x expert ffn), forward and
// backward; the router comes on top.
TEST(MoeBlock, EvenlyLoadedOneExpertPerRankMatchesTheDenseLayerOfActiveWidth) {
  Job moe = preset_job("mixtral-8x7b", 4096, 64);
  moe.plan.dp = 8;
  moe.plan.ep = 8;  // 8 experts, one per rank
  moe.model.moe->capacity_factor = 1.0;
  Job dense = moe;
  dense.model.moe.reset();
  dense.model.ffn_hidden = 2 * 14336;  // top_k x expert ffn
  dense.plan.ep = 1;
  const LayerKind moe_kind{true, false, false}, dense_kind{};
  for (Pass pass : {Pass::kForward, Pass::kBackward}) {
    const GemmFlops experts = gemm_flops(layer_ops(moe, moe_kind, pass), [](const Op& op) {
      return op.moe_part == MoePart::kExperts;
    });
    const GemmFlops mlp = gemm_flops(layer_ops(dense, dense_kind, pass),
                                     [](const Op& op) { return op.name.rfind("mlp_fc", 0) == 0; });
    EXPECT_GT(mlp.hardware, 0);
    EXPECT_DOUBLE_EQ(experts.hardware, mlp.hardware);
    EXPECT_DOUBLE_EQ(experts.model, mlp.model);
    // Attention is the same; the router is the only other matrix product.
    const GemmFlops router = gemm_flops(layer_ops(moe, moe_kind, pass), [](const Op& op) {
      return op.moe_part == MoePart::kRouter;
    });
    const double tokens = 4096, hidden = 4096, experts_count = 8;
    EXPECT_DOUBLE_EQ(router.model,
                     (pass == Pass::kForward ? 2.0 : 4.0) * tokens * hidden * experts_count);
    const GemmFlops all_moe =
        gemm_flops(layer_ops(moe, moe_kind, pass), [](const Op&) { return true; });
    const GemmFlops all_dense =
        gemm_flops(layer_ops(dense, dense_kind, pass), [](const Op&) { return true; });
    EXPECT_DOUBLE_EQ(all_moe.model - router.model, all_dense.model);
  }
}

TEST(Imbalance, NeverBelowEvenLoadAndLearnedAboveForced) {
  EXPECT_DOUBLE_EQ(expected_max_standard_normal(1), 0.0);
  EXPECT_NEAR(expected_max_standard_normal(2), 1 / std::sqrt(M_PI), 1e-6);  // exact
  // Monte Carlo of 20,000 maxima of 64 normals: 2.342.
  EXPECT_NEAR(expected_max_standard_normal(64), 2.342, 0.005);
  MoeShape m{256, 8, 2048, 1};
  for (int64_t ep : {1, 2, 8, 32, 64, 256}) {
    for (int64_t tokens : {1, 128, 4096, 65536}) {
      m.load_balance = LoadBalance::kForced;
      const double forced = busiest_rank_load(m, tokens, ep);
      m.load_balance = LoadBalance::kLearned;
      const double learned = busiest_rank_load(m, tokens, ep);
      EXPECT_GE(forced, 1.0);
      EXPECT_GE(learned, forced);
      if (ep == 1) {
        EXPECT_DOUBLE_EQ(learned, 1.0);
      }
    }
  }
  // The research notes' Monte Carlo for forced balance, T 512, k 8, ep 16,
  // E 128: E[max] / mean = 1.029.
  MoeShape q{128, 8, 768, 0};
  q.load_balance = LoadBalance::kForced;
  EXPECT_NEAR(busiest_rank_load(q, 512, 16), 1.029, 0.005);
  // An aux-loss router skews more than DeepSeek's loss-free bias; a
  // capacity factor caps what an expert takes.
  q.load_balance = LoadBalance::kLearned;
  const double aux = busiest_rank_load(q, 4096, 32);
  q.balancing = RouterBalancing::kLossFree;
  EXPECT_LT(busiest_rank_load(q, 4096, 32), aux);
  q.capacity_factor = 1.05;
  EXPECT_DOUBLE_EQ(busiest_rank_load(q, 4096, 32), std::min(1.05, busiest_rank_load(q, 4096, 32)));
  q.balancing = RouterBalancing::kAuxLoss;
  EXPECT_DOUBLE_EQ(busiest_rank_load(q, 4096, 32), 1.05);
}

// Parallel folding changes which ranks hold which experts, not the work: the
// same plan with experts split expert_tp = tp ways (the 1.0 rule) or
// unsplit gives every GPU the same FLOPs.
TEST(Folding, SameFlopsPerGpuAsTheUnfoldedPlan) {
  for (LoadBalance balance : {LoadBalance::kForced, LoadBalance::kLearned}) {
    Job unfolded = preset_job("mixtral-8x7b", 4096, 64);
    unfolded.model.moe->load_balance = balance;
    unfolded.plan.tp = 2;
    unfolded.plan.sequence_parallel = true;
    unfolded.plan.dp = 4;
    unfolded.plan.ep = 4;
    unfolded.plan.expert_tp = 2;  // ep * expert_tp = 8 = tp * dp
    Job folded = unfolded;
    folded.plan.expert_tp = 1;  // experts regroup the 8 ranks as ep 4 x expert-dp 2
    ASSERT_TRUE(validate(unfolded).empty());
    ASSERT_TRUE(validate(folded).empty());
    EXPECT_NEAR(hardware_flops_per_step(folded) / hardware_flops_per_step(unfolded), 1.0, 1e-12);
    EXPECT_DOUBLE_EQ(model_flops_per_step(folded), model_flops_per_step(unfolded));
    // A folded plan the 1.0 rule rejects: ep 8 > dp*cp 4.
    folded.plan.ep = 8;
    EXPECT_TRUE(validate(folded).empty());
    folded.plan.ep = 16;
    EXPECT_FALSE(validate(folded).empty());
  }
}

TEST(Folding, ExpertMemoryShardsOverExpertTpAndExpertDp) {
  Job job = preset_job("mixtral-8x7b", 4096, 64);
  job.plan.tp = 2;
  job.plan.sequence_parallel = true;
  job.plan.dp = 4;
  job.plan.ep = 2;
  job.plan.expert_tp = 2;
  const StageParams two = layer_parameters(job, {true, false, false});
  job.plan.expert_tp = 1;
  const StageParams one = layer_parameters(job, {true, false, false});
  EXPECT_DOUBLE_EQ(two.expert * 2, one.expert);
  EXPECT_DOUBLE_EQ(two.dense, one.dense);
  EXPECT_EQ(expert_dp_size(job), 4);  // 8 ranks / (ep 2 x expert_tp 1)
  job.plan.expert_tp = 2;
  EXPECT_EQ(expert_dp_size(job), 2);
}

TEST(Attention, MlaProjectionsAndCore) {
  Job job = preset_job("deepseek-v3", 4096, 64);
  const ParamCount p = count_parameters(job.model, 4096);
  // DeepSeek-V3 section 4.2: 671B total, 37B activated; the research notes'
  // count from the config reproduces 671.03B and 37.55B.
  EXPECT_NEAR(p.total / 1e9, 671.03, 0.01);
  EXPECT_NEAR(p.active / 1e9, 37.55, 0.01);
  EXPECT_NEAR(p.mtp / 1e9, 11.61, 0.01);
  // Core: QK of 192 (128 + 64 RoPE), V of 128, 128 heads, causal.
  const LayerKind kind{true, false, false};
  double attn = 0;
  for (const Op& op : layer_ops(job, kind, Pass::kForward)) {
    if (op.kind == OpKind::kAttention) attn += op.model_flops;
  }
  const double s = 4096;
  EXPECT_DOUBLE_EQ(attn, 2 * (s * s / 2) * 128 * (192 + 128));
  // With TP the down-projections are replicated, counted once as model work.
  job.plan.tp = 4;
  job.plan.sequence_parallel = true;
  job.plan.dp = 4;
  const GemmFlops down = gemm_flops(layer_ops(job, kind, Pass::kForward), [](const Op& op) {
    return op.name.find("_down") != std::string::npos;
  });
  EXPECT_DOUBLE_EQ(down.model * 4, down.hardware);
}

TEST(Attention, SlidingWindowLayersSeeTheirWindow) {
  Job job = preset_job("gpt-oss-120b", 4096, 64);
  auto core = [&](bool sliding) {
    for (const Op& op : layer_ops(job, {true, sliding, false}, Pass::kForward)) {
      if (op.kind == OpKind::kAttention) return op;
    }
    return Op{};
  };
  const Op full = core(false), window = core(true);
  EXPECT_EQ(window.attention.window, 128);
  EXPECT_EQ(full.attention.window, 0);
  // s w - w^2 / 2 keys per head against s^2 / 2.
  const double s = 4096, w = 128;
  EXPECT_DOUBLE_EQ(window.model_flops / full.model_flops, (s * w - w * w / 2) / (s * s / 2));
}

}  // namespace
}  // namespace podsim::strategies
