// gpt-oss's clamped SwiGLU: what the clamp costs where the software runs it
// as PyTorch ops of its own (Megatron-Core's chunk, two clamps and a cat
// before its fused activation), and that it costs nothing where the
// activation's kernel absorbs it.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tests/strategies/test_util.h"

namespace podsim::strategies {
namespace {

using testing::kept_bytes;
using testing::memory_bytes;
using testing::op_named;
using testing::preset_job;

/// gpt-oss-120b, one 4,096-token micro-batch, every expert on this rank and
/// evenly loaded, with the clamp where `clamp` puts it.
Job gpt_oss(ClampImpl clamp) {
  Job job = preset_job("gpt-oss-120b", 4096, 8, 1);
  job.model.moe->load_balance = LoadBalance::kForced;
  job.software.elementwise.activation_clamp = clamp;
  return job;
}

/// The ops `first` and `second` of a layer pass, which must run one after the
/// other.
std::pair<Op, Op> adjacent_ops(const Job& job, Pass pass, const std::string& first,
                               const std::string& second) {
  const std::vector<Op> ops = layer_ops(job, pass);
  for (size_t i = 0; i + 1 < ops.size(); ++i) {
    if (ops[i].name == first) {
      EXPECT_EQ(ops[i + 1].name, second);
      return {ops[i], ops[i + 1]};
    }
  }
  ADD_FAILURE() << first << " not in the layer";
  return {};
}

TEST(ClampedGlu, MegatronClampsBeforeItsFusedActivation) {
  const Job job = gpt_oss(ClampImpl::kEager);
  const auto [clamp, act] =
      adjacent_ops(job, Pass::kForward, "moe_expert_clamp", "moe_expert_swiglu");
  // Per activation output in bf16: the fused SwiGLU moves 3 x 2 B, the clamp
  // two clamps (r 2 w 2 each) and a cat (r 4 w 4) = 16 B in 3 kernels.
  EXPECT_DOUBLE_EQ(clamp.memory.bytes / act.memory.bytes, 16.0 / 6.0);
  EXPECT_EQ(clamp.kernels, 3);
  EXPECT_DOUBLE_EQ(clamp.imbalance, act.imbalance);
  // It keeps its input (the first GEMM's output) beside the activation's
  // clamped copy: as many bytes again.
  EXPECT_DOUBLE_EQ(clamp.saved_bytes, act.saved_bytes);

  // Backward after the activation's: the masks (1 B each) and where() of two
  // clamp_backwards, 3e + 2 and 4e + 6, and split's cat 4e: 30 B in 7
  // kernels against the fused backward's 5 x 2 B.
  const auto [act_bwd, clamp_bwd] =
      adjacent_ops(job, Pass::kBackward, "moe_expert_swiglu_bwd", "moe_expert_clamp_bwd");
  EXPECT_DOUBLE_EQ(clamp_bwd.memory.bytes / act_bwd.memory.bytes, 30.0 / 10.0);
  EXPECT_EQ(clamp_bwd.kernels, 7);
}

TEST(ClampedGlu, AFusedOrCompiledActivationAbsorbsTheClamp) {
  Job unclamped = gpt_oss(ClampImpl::kEager);
  unclamped.model.clamped_glu = false;
  for (const Job& job : {gpt_oss(ClampImpl::kWithActivation), unclamped}) {
    for (Pass pass : {Pass::kForward, Pass::kBackward}) {
      for (const Op& op : layer_ops(job, pass)) {
        EXPECT_EQ(op.name.find("clamp"), std::string::npos) << op.name;
      }
    }
  }
  EXPECT_DOUBLE_EQ(memory_bytes(layer_ops(gpt_oss(ClampImpl::kWithActivation), Pass::kForward)),
                   memory_bytes(layer_ops(unclamped, Pass::kForward)));
  EXPECT_DOUBLE_EQ(kept_bytes(gpt_oss(ClampImpl::kWithActivation)), kept_bytes(unclamped));

  // A dense clamped layer: eager where the activation is (torchtitan's
  // swiglu), inside the kernel once a compiler fuses the block.
  Job dense = preset_job("llama3-8b", 8192, 8, 1);
  dense.model.clamped_glu = true;
  dense.software.elementwise.activation = ChainImpl::kEager;
  const std::optional<Op> eager = op_named(layer_ops(dense, Pass::kForward), "mlp_clamp");
  ASSERT_TRUE(eager);
  EXPECT_DOUBLE_EQ(eager->memory.bytes, 16.0 * 8192 * 14336);
  ASSERT_TRUE(op_named(layer_ops(dense, Pass::kBackward), "mlp_clamp_bwd"));
  dense.software.elementwise.compiled = true;
  EXPECT_FALSE(op_named(layer_ops(dense, Pass::kForward), "mlp_clamp"));
}

TEST(ClampedGlu, MoeActRecomputeDropsWhatTheClampKeepsAndRerunsIt) {
  Job unclamped = gpt_oss(ClampImpl::kEager);
  unclamped.model.clamped_glu = false;
  const Job clamped = gpt_oss(ClampImpl::kEager);
  const double clamp_saved =
      op_named(layer_ops(clamped, Pass::kForward), "moe_expert_clamp").value().saved_bytes;
  ASSERT_GT(clamp_saved, 0);
  EXPECT_DOUBLE_EQ(kept_bytes(clamped) - kept_bytes(unclamped), clamp_saved);

  // Megatron's moe_act checkpoints the whole bias_act_func, clamp included:
  // its internals are not kept, and the recompute runs the clamp again.
  auto moe_act = [](Job job) {
    job.plan.recompute.mode = RecomputeMode::kSelective;
    job.plan.recompute.modules = module_bit(RecomputeModule::kMoeAct);
    return job;
  };
  EXPECT_DOUBLE_EQ(kept_bytes(moe_act(clamped)), kept_bytes(moe_act(unclamped)));
  EXPECT_TRUE(op_named(layer_ops(moe_act(clamped), Pass::kRecompute), "moe_expert_clamp"));
  EXPECT_FALSE(op_named(layer_ops(moe_act(unclamped), Pass::kRecompute), "moe_expert_clamp"));
}

}  // namespace
}  // namespace podsim::strategies
