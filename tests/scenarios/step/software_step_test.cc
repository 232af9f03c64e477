// The software stack in the simulated step: the same plan on the same GPUs
// under different frameworks, and what a framework cannot do on a GPU.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "scenarios/input/reader.h"
#include "scenarios/step/simulate.h"
#include "scenarios/step/software.h"
#include "tests/scenarios/step/step_test_util.h"

namespace podsim::scenarios {
namespace {

using nlohmann::json;
using testing::simulate_ok;

/// Llama 3 8B on one 8-GPU H100 node, FSDP, sequence 8192.
json llama8b(const json& software) {
  json s = json::parse(R"({
    "model": "llama3-8b",
    "cluster": {"base": "dgx-h100-superpod", "nodes": 1},
    "training": {"seq_len": 8192, "global_batch": 16, "micro_batch": 2},
    "parallelism": {"dp": 8, "zero": 3}
  })");
  s["software"] = software;
  return s;
}

ScenarioSpec spec_of(const json& scenario) { return testing::read(scenario.dump()); }

TEST(SoftwareStep, AttentionKernelChangesOnlyAttention) {
  json fa2 = {{"base", "megatron-core"}, {"attention", {{"kernel", "fa2"}}}};
  json fa3 = {{"base", "megatron-core"}, {"attention", {{"kernel", "fa3"}}}};
  const Report slow = simulate_ok(spec_of(llama8b(fa2)));
  const Report fast = simulate_ok(spec_of(llama8b(fa3)));
  EXPECT_GT(slow.step_time_s, fast.step_time_s);
  // Same work: model FLOPs do not depend on the kernel.
  EXPECT_DOUBLE_EQ(slow.model_flops_per_step, fast.model_flops_per_step);
}

TEST(SoftwareStep, DelayedScalingWaitsForItsAmaxAllReduceEveryForwardAndBackward) {
  // Llama 3 8B in fp8 on 16 GPUs of two nodes, data parallel only: 4
  // micro-batches, each forward and backward closing with a blocking
  // all-reduce of 384 / 256 fp32 amaxes over all 16 ranks, which podsim
  // collective prices at 36.2 us (tree, LL) across the two nodes.
  json scenario = llama8b("megatron-core");
  scenario["cluster"]["nodes"] = 2;
  scenario["training"] = {
      {"seq_len", 4096}, {"global_batch", 64}, {"micro_batch", 1}, {"precision", "fp8"}};
  scenario["parallelism"] = {{"dp", 16}, {"zero", 1}};
  const Report with = simulate_ok(spec_of(scenario));
  scenario["software"] = {{"base", "megatron-core"}, {"fp8", {{"amax_all_reduce", false}}}};
  const Report without = simulate_ok(spec_of(scenario));
  const double per_reduction_s = (with.step_time_s - without.step_time_s) / (2 * 4);
  // The all-reduce plus two tiny kernels (concatenation, scale update).
  EXPECT_GT(per_reduction_s, 36e-6);
  EXPECT_LT(per_reduction_s, 36.3e-6 + 2 * 5e-6);
}

TEST(SoftwareStep, FlashAttention3OnA100IsBadInputNamingTheMechanism) {
  json scenario = llama8b({{"base", "megatron-core"}, {"attention", {{"kernel", "fa3"}}}});
  scenario["cluster"] = {{"base", "dgx-a100-selene"}, {"nodes", 1}};
  const Result<Report> report = simulate(spec_of(scenario));
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.problems().front().path, "/software/attention/kernel");
  EXPECT_NE(report.problems().front().message.find("Hopper"), std::string::npos);
}

TEST(SoftwareStep, UnfusedAttentionKeepsTheScores) {
  // megatron-lm-2021 has no flash kernel: the job materialises the scores
  // even though options.flash_attention defaults to true.
  const ScenarioSpec spec = spec_of(llama8b("megatron-lm-2021"));
  EXPECT_TRUE(spec.options.flash_attention);
  EXPECT_FALSE(job_of(spec).options.flash_attention);
  EXPECT_TRUE(job_of(spec_of(llama8b("megatron-core"))).options.flash_attention);
}

TEST(SoftwareStep, ContextParallelSdpaRunsTheFlashBackend) {
  json scenario = llama8b("torchtitan");
  scenario["parallelism"] = {{"dp", 4}, {"cp", 2}, {"zero", 3}};
  scenario["cluster"]["gpu"] = "b200";
  EXPECT_EQ(kernel_implementation(spec_of(scenario)).attention, hwmodels::AttentionKernel::kFlash2);
  scenario["parallelism"] = {{"dp", 8}, {"zero", 3}};
  EXPECT_EQ(kernel_implementation(spec_of(scenario)).attention, hwmodels::AttentionKernel::kSdpa);
}

TEST(SoftwareStep, TheGpuWaitsForTheHostWhenKernelsAreShorterThanTheirLaunch) {
  auto host = [](const char* dispatch, const char* graphs) {
    // No clipping sync: a captured iteration cannot read the norm on the host.
    return json{{"base", "megatron-core"},
                {"host",
                 {{"dispatch_forward", dispatch},
                  {"dispatch_backward", dispatch},
                  {"cuda_graphs", graphs}}},
                {"optimizer", {{"clip_host_sync", false}}}};
  };
  const Report free_host = simulate_ok(spec_of(llama8b(host("0 s", "none"))));
  const Report slow_host = simulate_ok(spec_of(llama8b(host("10 ms", "none"))));
  const Report graphed = simulate_ok(spec_of(llama8b(host("10 ms", "full_iteration"))));
  // 10 ms per kernel outlasts any kernel of an 8B layer: the host sets the pace.
  EXPECT_GT(slow_host.step_time_s, 1.5 * free_host.step_time_s);
  EXPECT_GT(slow_host.breakdown.compute, free_host.breakdown.compute);
  // One graph for the whole iteration issues nothing kernel by kernel.
  EXPECT_NEAR(graphed.step_time_s, free_host.step_time_s, 1e-9 * free_host.step_time_s);
}

/// Llama 3 8B on a 16-chip TPU v6e slice as MaxText runs it: FSDP over every
/// chip, one step without gradient accumulation.
json llama8b_on_tpu(const json& software) {
  json s = json::parse(R"({
    "model": "llama3-8b",
    "cluster": {"base": "tpu-v6e-pod", "nodes": 4},
    "gpus": 16,
    "training": {"seq_len": 8192, "global_batch": 32, "micro_batch": 2},
    "parallelism": {"dp": 16, "zero": 3, "recompute": "full"}
  })");
  s["software"] = software;
  return s;
}

TEST(SoftwareStep, XlaOnATpuHoldsItsLivePeakAndNothingOutsideIt) {
  const Report xla = simulate_ok(spec_of(llama8b_on_tpu("maxtext-tpu")));
  ASSERT_FALSE(xla.per_stage.empty());
  for (const StageMemory& m : xla.per_stage) {
    // No cache of freed blocks on top of the compiled step's buffers, and
    // no CUDA context, NCCL buffers or cuBLAS workspaces on a TPU.
    EXPECT_DOUBLE_EQ(m.reserved, m.allocated);
    EXPECT_DOUBLE_EQ(m.outside_allocator, 0);
    EXPECT_DOUBLE_EQ(m.device, m.allocated);
  }
  // The same buffers under PyTorch's caching allocator: what it keeps cached
  // comes on top of the same live peak.
  json caching = {{"base", "maxtext-tpu"}, {"memory", {{"allocator", "caching"}}}};
  const Report cached = simulate_ok(spec_of(llama8b_on_tpu(caching)));
  ASSERT_EQ(cached.per_stage.size(), xla.per_stage.size());
  EXPECT_DOUBLE_EQ(cached.per_stage[0].allocated, xla.per_stage[0].allocated);
  EXPECT_GT(cached.per_stage[0].reserved, xla.per_stage[0].reserved);
  EXPECT_DOUBLE_EQ(cached.step_time_s, xla.step_time_s);
}

TEST(SoftwareStep, XlaCollectiveMatmulHidesTheTpGathersOnATpu) {
  // Llama 3 8B with TP 4 on v6e, the plan letting TP overlap: MaxText's
  // collective matmul puts each all-gather beside the einsum it feeds, so
  // less TP time is exposed and the step is shorter than with no overlap.
  json scenario = llama8b_on_tpu("maxtext-tpu");
  scenario["parallelism"] = {{"dp", 4}, {"tp", 4}, {"zero", 3}, {"recompute", "full"}};
  scenario["options"] = {{"overlap", {{"tp", true}}}};
  const Report matmul = simulate_ok(spec_of(scenario));
  scenario["software"] = {{"base", "maxtext-tpu"}, {"tp_overlap", {{"method", "none"}}}};
  const Report none = simulate_ok(spec_of(scenario));
  EXPECT_LT(matmul.breakdown.exposed_comm.tp, 0.9 * none.breakdown.exposed_comm.tp);
  EXPECT_LT(matmul.step_time_s, none.step_time_s);
  // The reduce-scatters after the row-parallel einsums still block.
  EXPECT_GT(matmul.breakdown.exposed_comm.tp, 0);
}

TEST(SoftwareStep, XlaOnGpusStillHoldsTheCudaContextAndNcclBuffers) {
  const Report xla = simulate_ok(spec_of(llama8b("maxtext")));
  ASSERT_FALSE(xla.per_stage.empty());
  const StageMemory& m = xla.per_stage[0];
  EXPECT_DOUBLE_EQ(m.reserved, m.allocated);
  EXPECT_GT(m.outside_allocator, 400e6);  // the context, and NCCL's buffers
  EXPECT_DOUBLE_EQ(m.device, m.allocated + m.outside_allocator);
}

TEST(SoftwareStep, AnFsdp2CopyOutHoldsTheFlatGatherBesideTheParameters) {
  // Llama 3 70B on 64 chips with its layer inputs and Q/K/V offloaded to the
  // host (the tpu-recipes plan): little stays on the chip, so the memory
  // peaks while a layer's weights are gathered.
  json scenario = json::parse(R"({
    "model": "llama3-70b",
    "cluster": {"base": "tpu-v6e-pod", "nodes": 16},
    "gpus": 64,
    "training": {"seq_len": 8192, "global_batch": 128, "micro_batch": 2},
    "parallelism": {"dp": 64, "zero": 3, "recompute": "selective",
                    "activation_offload": ["decoder_layer_input", "query_proj", "key_proj",
                                           "value_proj"]}
  })");
  scenario["software"] = {{"base", "maxtext-tpu"}, {"memory", {{"gathered_weights", "copy_out"}}}};
  const Report flat = simulate_ok(spec_of(scenario));
  scenario["software"] = {{"base", "maxtext-tpu"}, {"memory", {{"gathered_weights", "full_copy"}}}};
  const Report direct = simulate_ok(spec_of(scenario));
  ASSERT_FALSE(flat.per_stage.empty());
  ASSERT_FALSE(direct.per_stage.empty());
  // Only the memory differs: the copy's time is the compute-stream copies'
  // mechanism (data_parallel.copies_on_compute_stream), off in both.
  EXPECT_DOUBLE_EQ(flat.step_time_s, direct.step_time_s);
  // While a layer's gather runs, copy_out also holds its flat output (the
  // layer in bf16: 856 M parameters) beside the per-parameter copy.
  const double layer_bytes = 856.1e6 * 2;
  EXPECT_GT(flat.per_stage[0].allocated, direct.per_stage[0].allocated + 0.5 * layer_bytes);
  EXPECT_LT(flat.per_stage[0].allocated, direct.per_stage[0].allocated + 1.1 * layer_bytes);
}

}  // namespace
}  // namespace podsim::scenarios
