// Format 1.2's numeric recipes, Megatron's recompute modules, MaxText's
// activation offload and the "asym-embed-loss" pipeline layout: what each
// changes in a layer's ops and kept tensors.
#include <gtest/gtest.h>

#include <string>

#include "strategies/memory.h"
#include "strategies/pipeline_layout.h"
#include "strategies/workload.h"
#include "tests/strategies/test_util.h"

namespace podsim::strategies {
namespace {

using testing::kept_bytes;
using testing::memory_bytes;
using testing::preset_job;

double gemm_flops(const std::vector<Op>& ops) {
  double total = 0;
  for (const Op& op : ops) {
    if (op.kind == OpKind::kGemm) total += static_cast<double>(op.count) * op.flops;
  }
  return total;
}

Job fp8_job(PrecisionRecipe recipe) {
  Job job = preset_job("llama3-8b", 8192, 8, 1);
  job.training.precision = sim::NumberFormat::kFp8;
  job.training.recipe = recipe;
  return job;
}

TEST(PrecisionRecipe, CastsCostWhatEachRecipeWrites) {
  // The same GEMMs; the casts differ by the scale each recipe needs.
  const auto casts = [](PrecisionRecipe recipe) {
    return memory_bytes(layer_ops(fp8_job(recipe), Pass::kForward)) +
           memory_bytes(layer_ops(fp8_job(recipe), Pass::kBackward));
  };
  const double bf16 = [] {
    Job job = fp8_job(PrecisionRecipe::kSoftware);
    job.training.precision = sim::NumberFormat::kBf16;
    return memory_bytes(layer_ops(job, Pass::kForward)) +
           memory_bytes(layer_ops(job, Pass::kBackward));
  }();
  const double delayed = casts(PrecisionRecipe::kDelayed) - bf16;
  ASSERT_GT(delayed, 0);
  // Current scaling reads each operand once more for its amax: 6 B against 4.
  EXPECT_NEAR((casts(PrecisionRecipe::kTensorwise) - bf16) / delayed, 6.0 / 4.0, 1e-9);
  // MXFP8: both layouts in one kernel plus an E8M0 scale per 32 elements.
  EXPECT_NEAR((casts(PrecisionRecipe::kMxfp8) - bf16) / delayed, (4 + 2.0 / 32) / 4, 1e-9);
  // The software default (TE delayed scaling) is the delayed recipe.
  EXPECT_DOUBLE_EQ(casts(PrecisionRecipe::kSoftware), casts(PrecisionRecipe::kDelayed));
}

TEST(PrecisionRecipe, Fp4LinearsRunInFp4AndTheHeadStaysBf16) {
  Job job = fp8_job(PrecisionRecipe::kNvfp4);
  job.training.precision = sim::NumberFormat::kFp4;
  for (const Op& op : layer_ops(job, Pass::kForward)) {
    if (op.kind == OpKind::kGemm) {
      EXPECT_EQ(op.format, sim::NumberFormat::kFp4) << op.name;
    }
  }
  for (const Op& op : head_ops(job, Pass::kForward)) {
    if (op.kind == OpKind::kGemm) {
      EXPECT_EQ(op.format, sim::NumberFormat::kBf16) << op.name;
    }
  }
  // The NVFP4 quantization (global amax, Hadamard amax, quantize) costs more
  // than delayed fp8's single cast-transpose.
  EXPECT_GT(memory_bytes(layer_ops(job, Pass::kForward)),
            memory_bytes(layer_ops(fp8_job(PrecisionRecipe::kDelayed), Pass::kForward)));
}

Job selective(uint32_t modules) {
  Job job = preset_job("llama3-8b", 8192, 8, 1);
  job.plan.recompute.mode = RecomputeMode::kSelective;
  job.plan.recompute.modules = modules;
  return job;
}

TEST(RecomputeModules, CoreAttnAloneIsTheDefaultSelective) {
  const Job modules = selective(module_bit(RecomputeModule::kCoreAttn));
  const Job plain = selective(0);
  EXPECT_DOUBLE_EQ(kept_bytes(modules), kept_bytes(plain));
  EXPECT_DOUBLE_EQ(gemm_flops(layer_ops(modules, Pass::kRecompute)) +
                       memory_bytes(layer_ops(modules, Pass::kRecompute)),
                   gemm_flops(layer_ops(plain, Pass::kRecompute)) +
                       memory_bytes(layer_ops(plain, Pass::kRecompute)));
}

TEST(RecomputeModules, LayernormFreesBothNormOutputsAndRerunsTheNorms) {
  const Job job = selective(module_bit(RecomputeModule::kLayerNorm));
  const std::vector<Op> again = layer_ops(job, Pass::kRecompute);
  ASSERT_EQ(again.size(), 2u);
  EXPECT_EQ(again[0].name, "attn_norm");
  EXPECT_EQ(again[1].name, "mlp_norm");
  // Nothing recomputed inside attention: the core's internals are kept.
  const Job none = preset_job("llama3-8b", 8192, 8, 1);
  const double norm_output = 8192.0 * 4096.0 * 2;  // tokens x hidden, bf16
  EXPECT_NEAR(kept_bytes(none) - kept_bytes(job), 2 * norm_output, 1e-6 * norm_output);
}

TEST(RecomputeModules, MlpKeepsOnlyItsInput) {
  const Job job = selective(module_bit(RecomputeModule::kMlp));
  double mlp_flops = 0;
  for (const Op& op : layer_ops(job, Pass::kForward)) {
    if (op.kind == OpKind::kGemm && op.name.rfind("mlp_", 0) == 0) mlp_flops += op.flops;
  }
  EXPECT_NEAR(gemm_flops(layer_ops(job, Pass::kRecompute)), mlp_flops, 1e-9 * mlp_flops);
  // Freed: the SwiGLU's two saved inputs and fc2's input (3 x tokens x ffn/tp).
  const Job none = preset_job("llama3-8b", 8192, 8, 1);
  EXPECT_NEAR(kept_bytes(none) - kept_bytes(job), 3 * 8192.0 * 14336.0 * 2, 1.0);
}

TEST(ActivationOffload, OffloadedProjectionsAreNotRecomputed) {
  Job job = preset_job("llama3-8b", 8192, 8, 1);
  job.plan.recompute.mode = RecomputeMode::kSelective;
  job.plan.activation_offload =
      offload_bit(OffloadTensor::kDecoderLayerInput) | offload_bit(OffloadTensor::kQueryProj) |
      offload_bit(OffloadTensor::kKeyProj) | offload_bit(OffloadTensor::kValueProj);
  double forward_gemms = 0, qkv = 0;
  for (const Op& op : layer_ops(job, Pass::kForward)) {
    if (op.kind != OpKind::kGemm) continue;
    forward_gemms += op.flops;
    if (op.name == "qkv") qkv = op.flops;
  }
  ASSERT_GT(qkv, 0);
  EXPECT_NEAR(gemm_flops(layer_ops(job, Pass::kRecompute)), forward_gemms - qkv,
              1e-9 * forward_gemms);
  // The layer input went to the host as well: nothing of the layer stays.
  EXPECT_DOUBLE_EQ(kept_bytes(job), 0);
  const PolicyTensors t = policy_tensors(job, layer_ops(job, Pass::kForward));
  // Input 4096 and q, k, v 4096 + 1024 + 1024 columns, bf16.
  EXPECT_DOUBLE_EQ(t.offloaded_bytes, 8192.0 * (4096 + 6144) * 2);
}

TEST(ActivationOffload, WorksCarryTheirHostCopies) {
  Job job = preset_job("llama3-8b", 8192, 8, 1);
  job.plan.recompute.mode = RecomputeMode::kSelective;
  job.plan.activation_offload =
      offload_bit(OffloadTensor::kDecoderLayerInput) | offload_bit(OffloadTensor::kQueryProj);
  // Input and q, 4096 columns each, bf16, per layer and micro-batch.
  const double per_layer = 8192.0 * (4096 + 4096) * 2;
  const Work forward = make_work(job, Pass::kForward, 3, true, false);
  EXPECT_DOUBLE_EQ(forward.host_copy_out_bytes, 3 * per_layer);
  EXPECT_DOUBLE_EQ(forward.host_copy_in_bytes, 0);
  const Work backward = make_work(job, Pass::kBackward, 3, false, true);
  EXPECT_DOUBLE_EQ(backward.host_copy_in_bytes, 3 * per_layer);
  EXPECT_DOUBLE_EQ(backward.host_copy_out_bytes, 0);
  // The recompute starts from what the backward's copies brought back.
  const Work recompute = make_work(job, Pass::kRecompute, 3, false, false);
  EXPECT_DOUBLE_EQ(recompute.host_copy_in_bytes + recompute.host_copy_out_bytes, 0);
  // Without offload nothing crosses the host link.
  job.plan.activation_offload = 0;
  EXPECT_DOUBLE_EQ(make_work(job, Pass::kForward, 3, true, false).host_copy_out_bytes, 0);
}

TEST(AsymEmbedLossLayout, EmbeddingAndLossTakeALayerSlotEach) {
  // NVIDIA's MLPerf Llama 3.1 405B: 126 layers, PP8 x VP8 = 64 chunks of 2 slots.
  const std::vector<ChunkLayout> a = asym_embed_loss_layout(126, 64, 0);
  ASSERT_EQ(a.size(), 64u);
  EXPECT_EQ(a.front(), (ChunkLayout{1, true, 0, false}));
  EXPECT_EQ(a[1], (ChunkLayout{2, false, 0, false}));
  EXPECT_EQ(a.back(), (ChunkLayout{1, false, 0, true}));
  int64_t layers = 0;
  for (const ChunkLayout& c : a) layers += c.layers;
  EXPECT_EQ(layers, 126);
  // PP16 x VP8 = 128 chunks of one slot: the embedding and the loss alone.
  const std::vector<ChunkLayout> b = asym_embed_loss_layout(126, 128, 0);
  EXPECT_EQ(b.front(), (ChunkLayout{0, true, 0, false}));
  EXPECT_EQ(b.back(), (ChunkLayout{0, false, 0, true}));
  EXPECT_TRUE(asym_embed_loss_layout(126, 60, 0).empty());
}

}  // namespace
}  // namespace podsim::strategies
