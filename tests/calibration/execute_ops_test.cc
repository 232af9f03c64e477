// The executor's vocabulary: step names, the shapes its data flow implies,
// its parameter layout, its limits and the device memory a plan needs.
#include "calibration/execute_ops.h"

#include <gtest/gtest.h>

namespace podsim::calibration {
namespace {

// Llama 3 8B, one rank of TP 2 with sequence parallelism, 2 x 4096 tokens.
ExecLayerShape llama8b_tp2() {
  ExecLayerShape s;
  s.batch = 2;
  s.seq = 4096;
  s.tokens = 8192;
  s.tp = 2;
  s.sequence_parallel = true;
  s.norm_tokens = 4096;
  s.hidden = 4096;
  s.heads = 16;
  s.kv_heads = 4;
  s.head_dim = 128;
  s.ffn = 7168;
  return s;
}

TEST(ExecuteOps, EveryStepNameRoundTrips) {
  for (int i = 0; i <= static_cast<int>(ExecStep::kAdamStep); ++i) {
    const auto step = static_cast<ExecStep>(i);
    const std::optional<ExecStep> back = exec_step_from_name(to_string(step));
    ASSERT_TRUE(back.has_value()) << to_string(step);
    EXPECT_EQ(*back, step);
  }
  EXPECT_FALSE(exec_step_from_name("moe_router").has_value());
  EXPECT_FALSE(exec_step_from_name("").has_value());
}

TEST(ExecuteOps, GemmShapesFollowTheLayersDataFlow) {
  const ExecLayerShape s = llama8b_tp2();
  EXPECT_EQ(s.qkv_columns(), (16 + 8) * 128);
  EXPECT_EQ(s.attn_columns(), 2048);
  EXPECT_EQ(*expected_gemm(ExecStep::kQkv, s), (ExecGemmShape{8192, 3072, 4096, 1}));
  EXPECT_EQ(*expected_gemm(ExecStep::kMlpFc1, s), (ExecGemmShape{8192, 14336, 4096, 1}));
  EXPECT_EQ(*expected_gemm(ExecStep::kMlpFc2, s), (ExecGemmShape{8192, 4096, 7168, 1}));
  // Each linear's dgrad swaps its n and k; its wgrad is [in x out] over the tokens.
  const std::pair<ExecStep, std::pair<ExecStep, ExecStep>> linears[] = {
      {ExecStep::kQkv, {ExecStep::kQkvDgrad, ExecStep::kQkvWgrad}},
      {ExecStep::kAttnOut, {ExecStep::kAttnOutDgrad, ExecStep::kAttnOutWgrad}},
      {ExecStep::kMlpFc1, {ExecStep::kMlpFc1Dgrad, ExecStep::kMlpFc1Wgrad}},
      {ExecStep::kMlpFc2, {ExecStep::kMlpFc2Dgrad, ExecStep::kMlpFc2Wgrad}}};
  for (const auto& [forward, backward] : linears) {
    const ExecGemmShape f = *expected_gemm(forward, s);
    EXPECT_EQ(*expected_gemm(backward.first, s), (ExecGemmShape{f.m, f.k, f.n, 1}))
        << to_string(backward.first);
    EXPECT_EQ(*expected_gemm(backward.second, s), (ExecGemmShape{f.k, f.n, f.m, 1}))
        << to_string(backward.second);
  }
  EXPECT_FALSE(expected_gemm(ExecStep::kAttnNorm, s).has_value());
  EXPECT_EQ(*expected_attention(ExecStep::kAttnCoreBwd, s),
            (ExecAttentionShape{2, 16, 4, 4096, 4096, 128, true}));
  EXPECT_FALSE(expected_attention(ExecStep::kRope, s).has_value());
}

TEST(ExecuteOps, ParameterLayoutIsContiguous) {
  const ExecLayerShape s = llama8b_tp2();
  const LayerParamLayout p = layer_param_layout(s);
  EXPECT_EQ(p.qkv, 0);
  EXPECT_EQ(p.out, 4096 * 3072);
  EXPECT_EQ(p.fc1, p.out + 2048 * 4096);
  EXPECT_EQ(p.fc2, p.fc1 + 4096 * 14336);
  EXPECT_EQ(p.norm1, p.fc2 + 7168 * 4096);
  EXPECT_EQ(p.norm2, p.norm1 + 4096);
  EXPECT_EQ(p.total, p.norm2 + 4096);
}

TEST(ExecuteOps, LimitsNameWhatTheKernelsCannotRun) {
  EXPECT_TRUE(executor_limits(llama8b_tp2()).empty());
  ExecLayerShape s = llama8b_tp2();
  s.head_dim = 64;
  s.seq = 4000;
  s.tokens = 8000;
  s.norm_tokens = 4000;
  s.hidden = 20480;
  const std::vector<ExecLimit> limits = executor_limits(s);
  std::vector<std::string> fields;
  for (const ExecLimit& l : limits) fields.push_back(l.field);
  EXPECT_EQ(fields, (std::vector<std::string>{"head_dim", "seq_len", "hidden"}));
  s = llama8b_tp2();
  s.norm_tokens = 4000;  // tp 2 does not give 8192 tokens 4000 rows each
  ASSERT_EQ(executor_limits(s).size(), 1u);
  EXPECT_EQ(executor_limits(s)[0].field, "tp");
}

TEST(ExecuteOps, ExecutorBytesCountWhatItsKernelsMove) {
  const ExecLayerShape s = llama8b_tp2();
  const double rows = 4096.0 * 4096.0;  // norm tokens x hidden
  EXPECT_EQ(executor_bytes(ExecStep::kAttnNorm, s, 0), 2 * rows * 2 + 4096 * 2);
  EXPECT_EQ(executor_bytes(ExecStep::kMlpResidual, s, 0), 3 * rows * 2);
  EXPECT_EQ(executor_bytes(ExecStep::kMlpNormBwd, s, 0), 4 * rows * 2);
  EXPECT_EQ(executor_bytes(ExecStep::kMlpSwigluBwd, s, 0), 5 * 8192.0 * 7168 * 2);
  EXPECT_EQ(executor_bytes(ExecStep::kAdamStep, s, 1000), 30000);
  EXPECT_EQ(executor_bytes(ExecStep::kQkv, s, 0), 0);
}

TEST(ExecuteOps, DeviceBytesGrowByOneLayersStatePerLayer) {
  ExecPlan plan;
  plan.layer = llama8b_tp2();
  std::vector<double> bytes;
  for (int64_t layers = 1; layers <= 3; ++layers) {
    plan.layers = layers;
    bytes.push_back(plan_device_bytes(plan));
  }
  const double per_layer = bytes[1] - bytes[0];
  EXPECT_DOUBLE_EQ(bytes[2] - bytes[1], per_layer);
  // bf16 weight + fp32 grad, master, m, v: 18 bytes per parameter, plus activations.
  const double params = static_cast<double>(layer_param_layout(plan.layer).total);
  EXPECT_GT(per_layer, 18 * params);
  EXPECT_LT(per_layer, 18 * params + 2e9);
  EXPECT_GT(bytes[0], per_layer);  // the temporaries come once
}

}  // namespace
}  // namespace podsim::calibration
