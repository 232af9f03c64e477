#include "scenarios/input/reader.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "tests/scenarios/input/reader_test_util.h"

namespace podsim::scenarios {
namespace {

using nlohmann::json;
using testing::base_scenario;
using testing::has_problem;
using testing::kGiB;
using testing::problems_text;
using testing::read;
using testing::read_ok;

TEST(Reader, BaseScenarioAndDefaults) {
  const ScenarioSpec s = read_ok(base_scenario());
  EXPECT_EQ(s.name, "base");
  EXPECT_EQ(s.model.name, "llama3-8b");
  EXPECT_EQ(s.model.kv_heads, 8);
  EXPECT_EQ(s.model.head_dim, 128);  // = hidden / heads = 4096 / 32
  EXPECT_EQ(s.cluster.nodes, 8);     // overridden
  EXPECT_EQ(s.cluster.name, "dgx-h100-superpod");
  EXPECT_EQ(s.gpus, 64);  // = dp*tp*pp*cp
  EXPECT_EQ(s.training.micro_batch, 1);
  EXPECT_EQ(s.training.precision, sim::NumberFormat::kBf16);
  EXPECT_EQ(s.training.optimizer, strategies::Optimizer::kAdam);
  EXPECT_EQ(s.plan.tp, 1);
  EXPECT_EQ(s.plan.zero, 1);
  EXPECT_EQ(s.plan.shard_group, 0);  // all of dp
  EXPECT_EQ(s.plan.schedule, strategies::PipelineSchedule::kOneFOneB);
  EXPECT_EQ(s.plan.virtual_stages, 1);
  EXPECT_EQ(s.plan.context, strategies::ContextAlgorithm::kRing);
  EXPECT_EQ(s.plan.recompute.mode, strategies::RecomputeMode::kNone);
  const std::array<strategies::Dim, 5> order{strategies::Dim::kTp, strategies::Dim::kCp,
                                             strategies::Dim::kEp, strategies::Dim::kDp,
                                             strategies::Dim::kPp};
  EXPECT_EQ(s.plan.order, order);
  EXPECT_TRUE(s.options.overlap_dp);
  EXPECT_FALSE(s.options.overlap_tp);
  EXPECT_TRUE(s.options.overlap_pp);
  EXPECT_TRUE(s.options.overlap_cp);
  EXPECT_TRUE(s.options.flash_attention);
  EXPECT_EQ(s.options.dp_bucket_params, 0);
  EXPECT_EQ(s.options.fsdp_unit_layers, 1);
  EXPECT_EQ(s.options.grad_format, sim::NumberFormat::kFp32);
  EXPECT_FALSE(s.options.zero2_reduce_every_micro_batch.has_value());
  EXPECT_EQ(s.mode, SimulationMode::kSymmetric);
  EXPECT_TRUE(s.warnings.empty());
}

TEST(Reader, Int8TrainingUsesTheChipsInt8Rate) {
  json scenario = base_scenario();
  scenario["cluster"]["gpu"] = "tpu-v6e";
  scenario["training"]["precision"] = "int8";
  const ScenarioSpec s = read_ok(scenario);
  EXPECT_EQ(s.training.precision, sim::NumberFormat::kInt8);
  EXPECT_DOUBLE_EQ(s.cluster.gpu.peak(sim::NumberFormat::kInt8), 1836e12);  // 2x bf16 [N03]
  EXPECT_EQ(sim::to_string(s.training.precision), "int8");
}

TEST(Reader, NestedOverridesMergeKeyByKey) {
  json scenario = base_scenario();
  scenario["cluster"] = {{"base", "dgx-h100-superpod"}, {"scale_out", {{"nics_per_node", 4}}}};
  const ScenarioSpec s = read_ok(scenario);
  EXPECT_EQ(s.cluster.scale_out.nics_per_node, 4);
  // The rest of scale_out and everything else of the preset stay.
  EXPECT_DOUBLE_EQ(s.cluster.scale_out.nic_bw_bytes_per_s, 50e9);
  EXPECT_TRUE(s.cluster.scale_out.rail_optimized);
  ASSERT_EQ(s.cluster.scale_out.tiers.size(), 2u);
  EXPECT_EQ(s.cluster.scale_out.tiers[0].name, "leaf");
  EXPECT_EQ(s.cluster.nodes, 128);
  EXPECT_DOUBLE_EQ(s.cluster.scale_up.bw_bytes_per_s, 450e9);
}

TEST(Reader, GpuOverrideInsideAClusterPresetKeepsTheGpuPreset) {
  json scenario = base_scenario();
  scenario["cluster"]["gpu"] = {{"hbm", {{"capacity", "96 GiB"}}}};
  const ScenarioSpec s = read_ok(scenario);
  EXPECT_DOUBLE_EQ(s.cluster.gpu.hbm_capacity_bytes, 96 * kGiB);
  EXPECT_DOUBLE_EQ(s.cluster.gpu.hbm_bw_bytes_per_s, 3.35e12);  // still the H100's
  EXPECT_EQ(s.cluster.gpu.name, "h100-sxm-80g");
  EXPECT_EQ(s.cluster.gpu.sms, 132);
}

TEST(Reader, GpuReplacedByNameOrByANewBase) {
  json scenario = base_scenario();
  scenario["cluster"]["gpu"] = "h200-sxm-141g";
  EXPECT_DOUBLE_EQ(read_ok(scenario).cluster.gpu.hbm_capacity_bytes, 141 * kGiB);
  scenario["cluster"]["gpu"] = {{"base", "b200"}, {"sms", 100}};
  const ScenarioSpec s = read_ok(scenario);
  EXPECT_EQ(s.cluster.gpu.name, "b200");
  EXPECT_EQ(s.cluster.gpu.sms, 100);
  EXPECT_DOUBLE_EQ(s.cluster.gpu.peak(sim::NumberFormat::kBf16), 2250e12);
}

TEST(Reader, ArraysReplaceThePresetsArray) {
  json scenario = base_scenario();
  scenario["cluster"]["scale_out"] = {
      {"tiers", json::array({{{"name", "only"}, {"oversubscription", 2}}})}};
  const ScenarioSpec s = read_ok(scenario);
  ASSERT_EQ(s.cluster.scale_out.tiers.size(), 1u);
  EXPECT_EQ(s.cluster.scale_out.tiers[0].name, "only");
  EXPECT_EQ(s.cluster.scale_out.tiers[0].nodes, 0);
  EXPECT_EQ(s.cluster.scale_out.tiers[0].oversubscription, 2.0);
}

TEST(Reader, ModelBaseWithOverrides) {
  json scenario = base_scenario();
  scenario["model"] = {{"base", "llama3-8b"}, {"layers", 16}, {"name", "half llama"}};
  const ScenarioSpec s = read_ok(scenario);
  EXPECT_EQ(s.model.layers, 16);
  EXPECT_EQ(s.model.hidden, 4096);
  EXPECT_EQ(s.model.name, "half llama");
}

TEST(Reader, FullObjectFormsWithNumbersAndUnitStrings) {
  json scenario = base_scenario();
  scenario["model"] = {{"layers", 4},         {"hidden", 1024},         {"ffn_hidden", 4096},
                       {"heads", 16},         {"vocab", 32000},         {"mlp", "gelu"},
                       {"norm", "layernorm"}, {"tied_embeddings", true}};
  scenario["cluster"] = {
      {"gpu",
       {{"peak_flops", {{"bf16", 1e15}, {"fp32", "50 TFLOP/s"}}},
        {"hbm", {{"capacity", 100e9}, {"bandwidth", "4 TB/s"}}},
        {"l2", {{"capacity", "64 MiB"}, {"bandwidth", 10e12}}},
        {"sms", 100},
        {"clock", "2 GHz"},
        {"launch_overhead", "3 us"}}},
      {"nodes", 2},
      {"gpus_per_node", 4},
      {"scale_up", {{"bandwidth", "200 GB/s"}, {"latency", 1e-6}, {"efficiency", 0.5}}},
      {"scale_out", {{"nic_bandwidth", "100 Gb/s"}}},
      {"price_per_gpu_hour", 2.5}};
  scenario["parallelism"] = {{"dp", 8}};
  const ScenarioSpec s = read_ok(scenario);
  EXPECT_EQ(s.model.name, "custom");
  EXPECT_EQ(s.model.kv_heads, 16);  // defaults to heads
  EXPECT_EQ(s.model.head_dim, 64);
  EXPECT_EQ(s.model.mlp, strategies::MlpKind::kGelu);
  EXPECT_EQ(s.model.norm, strategies::NormKind::kLayerNorm);
  EXPECT_TRUE(s.model.tied_embeddings);
  EXPECT_EQ(s.cluster.name, "custom");
  EXPECT_DOUBLE_EQ(s.cluster.gpu.peak(sim::NumberFormat::kBf16), 1e15);
  EXPECT_DOUBLE_EQ(s.cluster.gpu.peak(sim::NumberFormat::kFp32), 50e12);
  EXPECT_EQ(s.cluster.gpu.peak(sim::NumberFormat::kFp8), 0);
  EXPECT_DOUBLE_EQ(s.cluster.gpu.hbm_bw_bytes_per_s, 4e12);
  EXPECT_DOUBLE_EQ(s.cluster.gpu.l2_capacity_bytes, 64.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(s.cluster.gpu.clock_hz, 2e9);
  EXPECT_DOUBLE_EQ(s.cluster.gpu.launch_overhead_s, 3e-6);
  EXPECT_EQ(s.cluster.scale_up.domain, 4);  // defaults to gpus_per_node
  EXPECT_EQ(s.cluster.scale_up.efficiency, 0.5);
  EXPECT_EQ(s.cluster.scale_out.efficiency, 1.0);   // line rate unless given
  EXPECT_EQ(s.cluster.scale_out.nics_per_node, 4);  // defaults to gpus_per_node
  EXPECT_DOUBLE_EQ(s.cluster.scale_out.nic_bw_bytes_per_s, 12.5e9);
  ASSERT_EQ(s.cluster.scale_out.tiers.size(), 1u);  // one non-blocking tier
  EXPECT_EQ(s.cluster.scale_out.tiers[0].nodes, 0);
  ASSERT_TRUE(s.cluster.price_per_gpu_hour.has_value());
  EXPECT_DOUBLE_EQ(*s.cluster.price_per_gpu_hour, 2.5);
}

TEST(Reader, PlanKeys) {
  json scenario = base_scenario();
  scenario["model"] = "llama3-70b";
  scenario["cluster"]["nodes"] = 128;
  scenario["training"] = {{"seq_len", 8192},
                          {"global_batch", 64},
                          {"micro_batch", 2},
                          {"precision", "fp8"},
                          {"optimizer", "sgd"}};
  scenario["parallelism"] = {
      {"dp", 4},
      {"tp", 8},
      {"pp", 4},
      {"cp", 2},
      {"sequence_parallel", true},
      {"zero", 3},
      {"shard_group", 2},
      {"pipeline", {{"schedule", "interleaved_1f1b"}, {"virtual_stages", 5}}},
      {"context", {{"algorithm", "all_gather"}}},
      {"recompute", {{"every", 4}}},
      {"order", "tp-cp-ep-pp-dp"}};
  scenario["options"] = {{"overlap", {{"tp", true}, {"dp", false}}},
                         {"flash_attention", true},
                         {"simulation", "every_rank"},
                         {"dp_bucket_params", 50000000},
                         {"fsdp_unit_layers", 2},
                         {"grad_format", "bf16"},
                         {"zero2_reduce_every_micro_batch", false}};
  const ScenarioSpec s = read_ok(scenario);
  EXPECT_EQ(s.gpus, 256);
  EXPECT_EQ(s.training.micro_batch, 2);
  EXPECT_EQ(s.training.precision, sim::NumberFormat::kFp8);
  EXPECT_EQ(s.training.optimizer, strategies::Optimizer::kSgd);
  EXPECT_TRUE(s.plan.sequence_parallel);
  EXPECT_EQ(s.plan.zero, 3);
  EXPECT_EQ(s.plan.shard_group, 2);
  EXPECT_EQ(s.plan.schedule, strategies::PipelineSchedule::kInterleavedOneFOneB);
  EXPECT_EQ(s.plan.virtual_stages, 5);
  EXPECT_EQ(s.plan.context, strategies::ContextAlgorithm::kAllGather);
  EXPECT_EQ(s.plan.recompute.mode, strategies::RecomputeMode::kEvery);
  EXPECT_EQ(s.plan.recompute.every_layers, 4);
  EXPECT_EQ(s.plan.order[3], strategies::Dim::kPp);
  EXPECT_EQ(s.plan.order[4], strategies::Dim::kDp);
  EXPECT_TRUE(s.options.overlap_tp);
  EXPECT_FALSE(s.options.overlap_dp);
  EXPECT_TRUE(s.options.overlap_pp);
  EXPECT_TRUE(s.options.flash_attention);
  EXPECT_EQ(s.options.dp_bucket_params, 50000000);
  EXPECT_EQ(s.options.fsdp_unit_layers, 2);
  EXPECT_EQ(s.options.grad_format, sim::NumberFormat::kBf16);
  EXPECT_EQ(s.options.zero2_reduce_every_micro_batch, std::optional<bool>(false));
  EXPECT_EQ(s.mode, SimulationMode::kEveryRank);
  for (const char* mode : {"selective", "full", "none"}) {
    scenario["parallelism"]["recompute"] = mode;
    const strategies::RecomputeMode expected =
        std::string(mode) == "selective" ? strategies::RecomputeMode::kSelective
        : std::string(mode) == "full"    ? strategies::RecomputeMode::kFull
                                         : strategies::RecomputeMode::kNone;
    EXPECT_EQ(read_ok(scenario).plan.recompute.mode, expected) << mode;
  }
}

TEST(Reader, AttentionKeysTheKindDoesNotUseAreNamedInAWarning) {
  // DeepSeek-V3's preset with grouped-query attention asked for: its MLA
  // ranks no longer describe anything the model runs.
  json scenario = base_scenario();
  scenario["model"] = {{"base", "deepseek-v3"}, {"attention", {{"kind", "gqa"}}}};
  scenario["cluster"]["nodes"] = 128;
  scenario["parallelism"] = {{"dp", 32}, {"tp", 2}, {"pp", 16}, {"ep", 64}};
  // (61 layers over 16 stages also warn: count only the attention's.)
  auto mentions = [](const ScenarioSpec& spec, const std::string& text) {
    int32_t n = 0;
    for (const std::string& w : spec.warnings) n += w.find(text) != std::string::npos ? 1 : 0;
    return n;
  };
  const ScenarioSpec gqa = read_ok(scenario);
  EXPECT_EQ(mentions(gqa,
                     "q_lora_rank, kv_lora_rank, qk_rope_head_dim, qk_nope_head_dim, v_head_dim "
                     "describe multi-head latent attention, but kind is \"gqa\""),
            1);
  scenario["model"]["attention"]["kind"] = "mla";
  EXPECT_EQ(mentions(read_ok(scenario), "latent attention"), 0);
  // A window period without a window changes nothing.
  json windowless = base_scenario();
  windowless["model"] = {{"base", "llama3-8b"}, {"attention", {{"sliding_window_every", 2}}}};
  const ScenarioSpec every = read_ok(windowless);
  ASSERT_EQ(every.warnings.size(), 1u);
  EXPECT_NE(every.warnings[0].find("sliding_window_every: no sliding_window"), std::string::npos);
  windowless["model"]["attention"]["sliding_window"] = 4096;
  EXPECT_TRUE(read_ok(windowless).warnings.empty());
}

TEST(Reader, MixtureOfExpertsKeysOfVersion1Point2) {
  json scenario = base_scenario();
  scenario["model"] = "deepseek-v3";
  scenario["cluster"]["nodes"] = 128;
  scenario["parallelism"] = {{"dp", 32},
                             {"tp", 2},
                             {"pp", 16},
                             {"ep", 64},
                             {"sequence_parallel", true},
                             {"recompute_modules", {"mla_up_proj", "mlp"}},
                             {"recompute_layers", 1},
                             {"pipeline", {{"layout", "Et*4|(t*4|)*14tmL"}}}};
  const ScenarioSpec s = read_ok(scenario);
  ASSERT_TRUE(s.model.moe);
  EXPECT_EQ(s.model.moe->dense_layers, 3);
  EXPECT_EQ(s.model.moe->load_balance, strategies::LoadBalance::kLearned);
  EXPECT_EQ(s.model.moe->balancing, strategies::RouterBalancing::kLossFree);
  EXPECT_FALSE(s.model.moe->capacity_factor);
  EXPECT_EQ(s.model.attention.kind, strategies::AttentionKind::kMla);
  EXPECT_EQ(s.model.attention.mla.kv_lora_rank, 512);
  EXPECT_EQ(s.model.mtp_layers, 1);
  EXPECT_EQ(s.plan.expert_tp, 1);
  ASSERT_EQ(s.plan.layout.size(), 16u);
  EXPECT_EQ(s.plan.layout.back().mtp, 1);
  EXPECT_EQ(s.plan.recompute.full_layers, 1);
  EXPECT_EQ(s.plan.recompute.modules,
            strategies::module_bit(strategies::RecomputeModule::kMlaUpProj) |
                strategies::module_bit(strategies::RecomputeModule::kMlp));
  // capacity_factor null is dropless; a number caps; an array of counts is a layout.
  scenario["model"] = {{"base", "mixtral-8x7b"},
                       {"moe", {{"capacity_factor", nullptr}, {"load_balance", "forced"}}}};
  scenario["parallelism"] = {{"dp", 64}, {"ep", 8}};
  EXPECT_FALSE(read_ok(scenario).model.moe->capacity_factor);
  EXPECT_EQ(read_ok(scenario).model.moe->load_balance, strategies::LoadBalance::kForced);
  scenario["model"]["moe"]["capacity_factor"] = 1.25;
  EXPECT_DOUBLE_EQ(*read_ok(scenario).model.moe->capacity_factor, 1.25);
  scenario["parallelism"] = {{"dp", 32}, {"pp", 2}, {"pipeline", {{"layout", {15, 17}}}}};
  scenario["training"]["global_batch"] = 256;
  const ScenarioSpec laid = read_ok(scenario);
  ASSERT_EQ(laid.plan.layout.size(), 2u);
  EXPECT_EQ(laid.plan.layout[0], (strategies::ChunkLayout{15, true, 0, false}));
  // The framework's MoE mechanisms: Megatron's all-to-all unless told.
  EXPECT_EQ(laid.options.moe.dispatcher, strategies::MoeDispatcher::kAllToAll);
  EXPECT_FALSE(laid.options.moe.shared_expert_overlap);
  scenario["options"] = {{"moe",
                          {{"dispatcher", "fused"},
                           {"shared_expert_overlap", true},
                           {"dispatch_format", "fp8"},
                           {"dispatch_sms", 20}}}};
  const ScenarioSpec fused = read_ok(scenario);
  EXPECT_EQ(fused.options.moe.dispatcher, strategies::MoeDispatcher::kFusedAllToAll);
  EXPECT_TRUE(fused.options.moe.shared_expert_overlap);
  EXPECT_EQ(fused.options.moe.dispatch_format, sim::NumberFormat::kFp8);
  EXPECT_EQ(fused.options.moe.dispatch_sms, 20);
}

TEST(Reader, EveryExampleReads) {
  size_t examples = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(testing::source_path("scenarios/examples"))) {
    if (entry.path().extension() != ".json") continue;
    ++examples;
    const Result<ScenarioSpec> spec = read_scenario_file(entry.path().string());
    EXPECT_TRUE(spec.ok()) << entry.path() << "\n" << problems_text(spec.problems());
  }
  EXPECT_GE(examples, 6u);
}

TEST(Reader, FileNameIsTheDefaultName) {
  const std::string path = testing::source_path("scenarios/examples/llama3-8b-dp.json");
  json scenario = json::parse(testing::read_file(path));
  ASSERT_TRUE(scenario.contains("name"));
  scenario.erase("name");
  const std::string copy = ::testing::TempDir() + "/my-scenario.json";
  {
    std::ofstream out(copy);
    out << scenario.dump();
  }
  const Result<ScenarioSpec> spec = read_scenario_file(copy);
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(spec.value().name, "my-scenario");
}

TEST(Reader, TorusAndMeshKeys) {
  nlohmann::json scenario = base_scenario();
  scenario["cluster"] = {{"base", "tpu-v6e-pod"}, {"nodes", 16}, {"slices", 2}};
  scenario["parallelism"] = {{"dp", 64}, {"zero", 3}};
  const ScenarioSpec spec = read_ok(scenario);
  EXPECT_EQ(spec.cluster.slices, 2);
  EXPECT_EQ(spec.cluster.scale_up.domain, 0);  // a torus domain is its slice
  EXPECT_EQ(spec.cluster.scale_up_domain(), 32);
  EXPECT_EQ(spec.cluster.scale_up.torus.max_shape, (std::vector<int>{16, 16}));
  EXPECT_EQ(spec.cluster.scale_up.torus.wrap_length, 16);
  EXPECT_FALSE(spec.cluster.scale_up.torus.wrap_needs_all_axes);

  scenario["cluster"]["scale_up"] = {{"torus", {{"shape", "8x4"}}}};
  EXPECT_EQ(read_ok(scenario).cluster.scale_up.torus.shape, (std::vector<int>{8, 4}));
  for (const char* bad : {"8x", "8x4x2x1", "0x32", "ax4", "8 x 4"}) {
    scenario["cluster"]["scale_up"] = {{"torus", {{"shape", bad}}}};
    const Result<ScenarioSpec> r = read(scenario);
    EXPECT_TRUE(has_problem(r.problems(), "/cluster/scale_up/torus/shape", "16x16x24")) << bad;
  }
  scenario["cluster"] = {{"base", "mi300x-8x"}, {"nodes", 8}, {"scale_up", {{"topology", "ring"}}}};
  EXPECT_TRUE(has_problem(read(scenario).problems(), "/cluster/scale_up/topology", "mesh"));
  scenario["cluster"]["scale_up"] = {{"topology", "mesh"}};
  EXPECT_EQ(read_ok(scenario).cluster.scale_up.topology, hwmodels::ScaleUpTopology::kMesh);
}

TEST(Reader, ClusterAlone) {
  const Result<hwmodels::ClusterSpec> meta = read_cluster_json(json("llama3-24k"));
  ASSERT_TRUE(meta.ok()) << problems_text(meta.problems());
  EXPECT_EQ(meta.value().total_gpus(), 24576);
  EXPECT_EQ(meta.value().name, "llama3-24k");
  const Result<hwmodels::ClusterSpec> merged =
      read_cluster_json({{"base", "dgx-h100-superpod"}, {"nodes", 4}, {"gpu", "b200"}});
  ASSERT_TRUE(merged.ok()) << problems_text(merged.problems());
  EXPECT_EQ(merged.value().nodes, 4);
  EXPECT_EQ(merged.value().gpu.name, "b200");
  // ("llama-24k" begins the words of llama3-24k: it is that preset.)
  const Result<hwmodels::ClusterSpec> bad = read_cluster_json(json("lama3-24k"));
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(has_problem(bad.problems(), "/cluster", "did you mean 'llama3-24k'"));
}

}  // namespace
}  // namespace podsim::scenarios

namespace podsim::scenarios {
namespace {

using nlohmann::json;
using testing::base_scenario;
using testing::has_problem;
using testing::read;
using testing::read_ok;

TEST(Reader, PrecisionRecipesAndFp4) {
  json scenario = base_scenario();
  scenario["training"]["precision"] = "fp8";
  scenario["training"]["precision_recipe"] = "tensorwise";
  const ScenarioSpec fp8 = read_ok(scenario);
  EXPECT_EQ(fp8.training.recipe, strategies::PrecisionRecipe::kTensorwise);
  EXPECT_TRUE(fp8.warnings.empty());
  // A recipe of another format is refused at the recipe.
  scenario["training"]["precision_recipe"] = "nvfp4";
  EXPECT_TRUE(has_problem(read(scenario).problems(), "/training/precision_recipe", "fp4"));
  // MXFP8 needs block-scaled tensor cores: not an H100.
  scenario["training"]["precision_recipe"] = "mxfp8";
  EXPECT_TRUE(has_problem(read(scenario).problems(), "/training/precision_recipe", "Blackwell"));
  // fp4 on an H100: refused, naming the GPUs that have it.
  scenario["training"]["precision"] = "fp4";
  scenario["training"].erase("precision_recipe");
  EXPECT_TRUE(has_problem(read(scenario).problems(), "/training/precision", "b200"));
  // On a B200 it reads, with NVFP4 as its recipe.
  scenario["cluster"] = {{"base", "dgx-b200"}, {"nodes", 8}};
  const ScenarioSpec fp4 = read_ok(scenario);
  EXPECT_EQ(fp4.training.precision, sim::NumberFormat::kFp4);
  EXPECT_EQ(fp4.training.recipe, strategies::PrecisionRecipe::kNvfp4);
  EXPECT_GT(fp4.cluster.gpu.peak(sim::NumberFormat::kFp4), 0);
}

TEST(Reader, AsymEmbedLossLayoutAndOffload) {
  json scenario = base_scenario();
  scenario["model"] = "llama3-405b";
  scenario["cluster"]["nodes"] = 32;
  scenario["training"]["global_batch"] = 256;
  scenario["parallelism"] = {
      {"dp", 4},
      {"tp", 8},
      {"pp", 8},
      {"pipeline",
       {{"schedule", "interleaved_1f1b"}, {"virtual_stages", 8}, {"layout", "asym-embed-loss"}}}};
  const ScenarioSpec s = read_ok(scenario);
  ASSERT_EQ(s.plan.layout.size(), 64u);
  EXPECT_TRUE(s.plan.layout.front().embedding);
  EXPECT_EQ(s.plan.layout.front().layers, 1);
  EXPECT_EQ(s.plan.layout[5].layers, 2);
  scenario["parallelism"]["pipeline"]["virtual_stages"] = 5;
  EXPECT_TRUE(has_problem(read(scenario).problems(), "/parallelism/pipeline/layout", "128"));
  // An offload list is MaxText's remat policy: selective, no warning.
  json offload = base_scenario();
  offload["parallelism"]["activation_offload"] = {"decoder_layer_input", "mlpwi"};
  const ScenarioSpec o = read_ok(offload);
  EXPECT_EQ(o.plan.recompute.mode, strategies::RecomputeMode::kSelective);
  EXPECT_EQ(o.plan.activation_offload,
            strategies::offload_bit(strategies::OffloadTensor::kDecoderLayerInput) |
                strategies::offload_bit(strategies::OffloadTensor::kMlpWi0) |
                strategies::offload_bit(strategies::OffloadTensor::kMlpWi1));
  EXPECT_TRUE(o.warnings.empty());
}

}  // namespace
}  // namespace podsim::scenarios
