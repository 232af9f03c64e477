// The reader's problems: every mistake of a file at once, each naming its
// path and a fix (the cross-field checks of reader_checks.cc), suggestions
// for misspelt keys, values accepted at the edges of the checks, warnings for
// unusual plans, and hostile input failing cleanly.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "scenarios/input/reader.h"
#include "tests/scenarios/input/reader_test_util.h"

namespace podsim::scenarios {
namespace {

using nlohmann::json;
using testing::base_scenario;
using testing::has_problem;
using testing::problems_text;
using testing::read;
using testing::read_ok;

std::vector<Problem> problems_of(const json& scenario) {
  const Result<ScenarioSpec> spec = read(scenario);
  EXPECT_FALSE(spec.ok()) << scenario.dump();
  return spec.problems();
}

TEST(Reader, EveryProblemOfAFileAtOnce) {
  json scenario = base_scenario();
  scenario["modle"] = 1;
  scenario["training"]["seq_len"] = "long";
  scenario["training"]["precision"] = "bf61";
  scenario["parallelism"]["zero"] = 7;
  scenario["cluster"]["scale_out"] = {{"nic_bandwidth", "400 GB"}};
  const std::vector<Problem> problems = problems_of(scenario);
  EXPECT_TRUE(has_problem(problems, "/modle", "unknown key"));
  EXPECT_TRUE(has_problem(problems, "/training/seq_len", "expected an integer"));
  EXPECT_TRUE(has_problem(problems, "/training/precision", "did you mean 'bf16'"));
  EXPECT_TRUE(has_problem(problems, "/parallelism/zero", "out of range"));
  EXPECT_TRUE(has_problem(problems, "/cluster/scale_out/nic_bandwidth",
                          "'400 GB' is a size, expected a bandwidth like '400 Gb/s'"));
  EXPECT_EQ(problems.size(), 5u) << problems_text(problems);
}

TEST(Reader, DidYouMean) {
  json scenario = base_scenario();
  scenario["parallelism"]["sequence_paralel"] = true;
  scenario["model"] = "lama3-70b";
  scenario["cluster"]["base"] = "llama3-42k";  // ("llama3-24" is a unique prefix: that preset)
  scenario["parallelism"]["pipeline"] = {{"schedule", "interleaved"}};
  const std::vector<Problem> problems = problems_of(scenario);
  EXPECT_TRUE(
      has_problem(problems, "/parallelism/sequence_paralel", "did you mean 'sequence_parallel'"));
  EXPECT_TRUE(has_problem(problems, "/model", "unknown model preset 'lama3-70b'"));
  EXPECT_TRUE(has_problem(problems, "/model", "did you mean 'llama3-70b'"));
  EXPECT_TRUE(has_problem(problems, "/cluster/base", "did you mean 'llama3-24k'"));
  EXPECT_TRUE(
      has_problem(problems, "/parallelism/pipeline/schedule", "did you mean 'interleaved_1f1b'"));
}

TEST(Reader, BaseIsOnlyAllowedWherePresetsAre) {
  json scenario = base_scenario();
  scenario["training"]["base"] = "llama3-8b";
  EXPECT_TRUE(has_problem(problems_of(scenario), "/training/base", "unknown key"));
}

struct CrossCheck {
  const char* name;
  std::function<void(json&)> mutate;
  const char* path;
  const char* fragment;
};

TEST(Reader, CrossFieldChecksNameThePathAndAFix) {
  const CrossCheck checks[] = {
      {"product", [](json& s) { s["gpus"] = 60; }, "/gpus", "set gpus to 64"},
      {"fits",
       [](json& s) {
         s["parallelism"]["dp"] = 72;
         s["training"]["global_batch"] = 576;
       },
       "/parallelism", "at least 9 nodes"},
      {"tp heads",
       [](json& s) {
         s["parallelism"] = {{"dp", 8}, {"tp", 3}};
       },
       "/parallelism/tp", "does not divide heads=32"},
      {"tp kv",
       [](json& s) {
         s["model"] = {{"base", "llama3-8b"}, {"heads", 48}, {"kv_heads", 8}, {"head_dim", 128}};
         s["parallelism"] = {{"dp", 4}, {"tp", 12}};
         s["cluster"]["nodes"] = 6;
         s["training"]["global_batch"] = 512;
       },
       "/parallelism/tp", "neither divides the other"},
      {"tp ffn",
       [](json& s) {
         s["model"] = {{"base", "llama3-8b"}, {"ffn_hidden", 14337}};
         s["parallelism"] = {{"dp", 8}, {"tp", 8}};
       },
       "/parallelism/tp", "does not divide ffn_hidden=14337"},
      {"head dim",
       [](json& s) {
         s["model"] = {{"base", "llama3-8b"}, {"heads", 24}, {"kv_heads", 8}};
       },
       "/model/heads", "give /model/head_dim"},
      {"kv divides",
       [](json& s) {
         s["model"] = {{"base", "llama3-8b"}, {"kv_heads", 12}};
       },
       "/model/kv_heads", "does not divide heads=32"},
      {"clamp needs a gate",
       [](json& s) {
         s["model"] = {{"base", "llama3-8b"}, {"mlp", "gelu"}, {"clamped_glu", true}};
       },
       "/model/clamped_glu", "set /model/mlp to \"swiglu\""},
      {"pp",
       [](json& s) {
         s["parallelism"] = {{"pp", 64}};
         s["training"]["global_batch"] = 8;
       },
       "/parallelism/pp", "use pp <= 32"},
      {"virtual",
       [](json& s) {
         s["parallelism"] = {
             {"dp", 16},
             {"pp", 4},
             {"pipeline", {{"schedule", "interleaved_1f1b"}, {"virtual_stages", 9}}}};
       },
       "/parallelism/pipeline/virtual_stages", "use virtual_stages <= 8"},
      {"batch", [](json& s) { s["training"]["global_batch"] = 1000; }, "/training/global_batch",
       "use global_batch 960 or 1024"},
      {"micro batch", [](json& s) { s["training"]["micro_batch"] = 3; }, "/training/global_batch",
       "dp*micro_batch = 64*3 = 192"},
      {"ring",
       [](json& s) {
         s["parallelism"] = {{"dp", 16}, {"cp", 4}};
         s["training"]["seq_len"] = 4100;
       },
       "/training/seq_len", "use seq_len 4096 or 4104"},
      {"all_gather",
       [](json& s) {
         s["parallelism"] = {{"dp", 16}, {"cp", 3}, {"context", {{"algorithm", "all_gather"}}}};
         s["training"]["seq_len"] = 4096;
         s["training"]["global_batch"] = 512;
         s["cluster"]["nodes"] = 6;
       },
       "/training/seq_len", "not divisible by 2*cp = 6"},
      {"ulysses seq",
       [](json& s) {
         s["parallelism"] = {{"dp", 16}, {"cp", 4}, {"context", {{"algorithm", "ulysses"}}}};
         s["training"]["seq_len"] = 4098;
       },
       "/training/seq_len", "not divisible by cp=4"},
      {"cp flash",
       [](json& s) {
         s["parallelism"] = {{"dp", 16}, {"cp", 4}};
         s["options"] = {{"flash_attention", false}};
       },
       "/options/flash_attention", "needs flash attention"},
      {"interleaved groups",
       [](json& s) {
         s["parallelism"] = {
             {"dp", 16},
             {"pp", 4},
             {"pipeline", {{"schedule", "interleaved_1f1b"}, {"virtual_stages", 2}}}};
         s["training"]["global_batch"] = 96;
       },
       "/training/global_batch", "groups of pp=4"},
      {"ulysses heads",
       [](json& s) {
         s["parallelism"] = {
             {"dp", 1}, {"tp", 4}, {"cp", 16}, {"context", {{"algorithm", "ulysses"}}}};
       },
       "/parallelism/cp", "heads/tp = 8"},
      {"sequence parallel",
       [](json& s) {
         s["parallelism"] = {{"dp", 8}, {"tp", 8}, {"sequence_parallel", true}};
         s["training"]["seq_len"] = 4100;
       },
       "/training/seq_len", "multiple of cp*tp = 8"},
      {"ep moe", [](json& s) { s["parallelism"]["ep"] = 2; }, "/parallelism/ep",
       "needs a mixture-of-experts model"},
      {"ep experts",
       [](json& s) {
         s["model"] = "mixtral-8x7b";
         s["parallelism"]["ep"] = 16;
       },
       "/parallelism/ep", "does not divide experts=8"},
      {"ep folding",
       [](json& s) {
         s["model"] = {{"base", "mixtral-8x7b"}, {"moe", {{"experts", 64}}}};
         s["parallelism"] = {{"dp", 4}, {"tp", 8}, {"ep", 64}, {"sequence_parallel", true}};
         s["cluster"]["nodes"] = 4;
         s["training"]["global_batch"] = 512;
       },
       "/parallelism/ep", "does not divide tp*cp*dp = 32"},
      {"expert tp",
       [](json& s) {
         s["model"] = {{"base", "mixtral-8x7b"}, {"moe", {{"ffn_hidden", 1100}}}};
         s["parallelism"] = {{"dp", 64}, {"ep", 8}, {"expert_tp", 8}};
       },
       "/parallelism/expert_tp", "does not divide moe.ffn_hidden=1100"},
      {"expert groups",
       [](json& s) {
         s["model"] = {{"base", "mixtral-8x7b"}, {"moe", {{"expert_groups", 3}}}};
       },
       "/model/moe/expert_groups", "does not divide experts=8"},
      {"mla",
       [](json& s) {
         s["model"] = {{"base", "llama3-8b"}, {"attention", {{"kind", "mla"}}}};
       },
       "/model/attention/kv_lora_rank", "MLA needs a positive kv_lora_rank"},
      {"layout syntax",
       [](json& s) {
         s["parallelism"] = {
             {"dp", 16}, {"pp", 4}, {"pipeline", {{"layout", "Et*8|(t*8|)*2tx*8L"}}}};
       },
       "/parallelism/pipeline/layout", "unknown symbol 'x'"},
      {"dualpipe stages",
       [](json& s) {
         s["parallelism"] = {{"dp", 8}, {"pp", 8}, {"pipeline", {{"schedule", "dualpipe"}}}};
         s["model"] = {{"base", "llama3-8b"}, {"layers", 30}};
         s["parallelism"]["pp"] = 2;
         s["parallelism"]["dp"] = 32;
         s["training"]["global_batch"] = 32;
       },
       "/training/global_batch", "at least 2*pp = 4"},
      {"dualpipe odd",
       [](json& s) {
         s["parallelism"] = {{"dp", 16}, {"pp", 3}, {"pipeline", {{"schedule", "dualpipe"}}}};
         s["cluster"]["nodes"] = 6;
         s["training"]["global_batch"] = 256;
       },
       "/parallelism/pp", "even number of stages"},
      {"top k",
       [](json& s) {
         s["model"] = {{"base", "mixtral-8x7b"}, {"moe", {{"top_k", 9}}}};
       },
       "/model/moe/top_k", "exceeds experts=8"},
      {"shard group",
       [](json& s) {
         s["parallelism"]["zero"] = 3;
         s["parallelism"]["shard_group"] = 48;
       },
       "/parallelism/shard_group", "does not divide dp*cp = 64"},
      {"shard group zero",
       [](json& s) {
         s["parallelism"]["zero"] = 0;
         s["parallelism"]["shard_group"] = 8;
       },
       "/parallelism/shard_group", "set /parallelism/zero to 3"},
      {"every",
       [](json& s) {
         s["parallelism"]["recompute"] = {{"every", 33}};
       },
       "/parallelism/recompute/every", "1 <= C <= 32"},
      {"order", [](json& s) { s["parallelism"]["order"] = "tp-cp-ep-dp-dp"; }, "/parallelism/order",
       "dp appears twice"},
      {"order unknown", [](json& s) { s["parallelism"]["order"] = "tp-cp-ep-dq-pp"; },
       "/parallelism/order", "did you mean 'dp'"},
      {"fp8",
       [](json& s) {
         s["cluster"]["gpu"] = "a100-sxm-80g";
         s["training"]["precision"] = "fp8";
       },
       "/cluster/gpu/peak_flops/fp8", "no fp8 rate"},
      {"int8 on a GPU without an int8 rate",
       [](json& s) {
         s["cluster"]["gpu"] = "b300";
         s["training"]["precision"] = "int8";
       },
       "/cluster/gpu/peak_flops/int8", "no int8 rate"},
      {"tier order",
       [](json& s) {
         s["cluster"]["scale_out"] = {
             {"tiers",
              {{{"name", "a"}, {"nodes", 32}}, {{"name", "b"}, {"nodes", 16}}, {{"name", "c"}}}}};
       },
       "/cluster/scale_out/tiers/1/nodes", "not more than the tier below"},
      {"tier multiple",
       [](json& s) {
         s["cluster"]["scale_out"] = {
             {"tiers",
              {{{"name", "a"}, {"nodes", 20}}, {{"name", "b"}, {"nodes", 150}}, {{"name", "c"}}}}};
       },
       "/cluster/scale_out/tiers/1/nodes", "use 140 or 160"},
      {"tier span",
       [](json& s) {
         s["cluster"]["scale_out"] = {{"tiers", {{{"name", "a"}, {"nodes", 4}}}}};
       },
       "/cluster/scale_out/tiers/0/nodes", "the cluster has 8"},
      {"domain",
       [](json& s) {
         s["cluster"]["scale_up"] = {{"domain", 12}};
       },
       "/cluster/scale_up/domain", "neither divides nor is a multiple of gpus_per_node=8"},
      {"scale out",
       [](json& s) {
         s["cluster"] = {{"gpu", "h100-sxm-80g"},
                         {"nodes", 8},
                         {"gpus_per_node", 8},
                         {"scale_up", {{"bandwidth", "450 GB/s"}}}};
       },
       "/cluster/scale_out", "required when the cluster has more than one node"},
  };
  for (const CrossCheck& check : checks) {
    json scenario = base_scenario();
    check.mutate(scenario);
    const Result<ScenarioSpec> spec = read(scenario);
    ASSERT_FALSE(spec.ok()) << check.name;
    EXPECT_TRUE(has_problem(spec.problems(), check.path, check.fragment))
        << check.name << ":\n"
        << problems_text(spec.problems());
  }
}

TEST(Reader, AcceptedEdgeCasesOfTheChecks) {
  // kv_heads divides tp: each KV head is replicated on tp/kv_heads ranks (Megatron GQA).
  json scenario = base_scenario();
  scenario["parallelism"] = {{"dp", 4}, {"tp", 16}};
  EXPECT_EQ(read_ok(scenario).plan.tp, 16);
  // head_dim given: hidden need not be divisible by heads.
  scenario = base_scenario();
  scenario["model"] = {{"base", "llama3-8b"}, {"heads", 24}, {"kv_heads", 8}, {"head_dim", 128}};
  EXPECT_EQ(read_ok(scenario).model.head_dim, 128);
  // Ulysses with fewer KV heads per TP rank than cp replicates them.
  scenario = base_scenario();
  scenario["parallelism"] = {
      {"dp", 2}, {"tp", 4}, {"cp", 8}, {"context", {{"algorithm", "ulysses"}}}};
  EXPECT_EQ(read_ok(scenario).plan.context, strategies::ContextAlgorithm::kUlysses);
  // A multi-node scale-up domain (NVL72-like) is a whole number of nodes.
  scenario = base_scenario();
  scenario["cluster"]["scale_up"] = {{"domain", 16}};
  EXPECT_EQ(read_ok(scenario).cluster.scale_up.domain, 16);
}

TEST(Reader, WarningsForUnusualButValidPlans) {
  json scenario = base_scenario();
  scenario["parallelism"] = {
      {"dp", 2},
      {"tp", 16},
      {"pp", 2},
      {"sequence_parallel", true},
      {"pipeline", {{"schedule", "interleaved_1f1b"}, {"virtual_stages", 3}}}};
  const ScenarioSpec s = read_ok(scenario);
  std::string all;
  for (const std::string& w : s.warnings) all += w + "\n";
  EXPECT_NE(all.find("spans more than one scale-up domain"), std::string::npos) << all;
  EXPECT_NE(all.find("stages are uneven"), std::string::npos) << all;  // 32 layers, 6 chunks
}

TEST(Reader, HostileInputsFailCleanly) {
  const std::string deep =
      "{\"model\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
  const Result<ScenarioSpec> nested = read_scenario_text(deep);
  ASSERT_FALSE(nested.ok());
  EXPECT_NE(nested.problems().front().message.find("nesting deeper"), std::string::npos);

  json scenario = base_scenario();
  scenario["name"] = std::string(10'000'000, 'x');
  const Result<ScenarioSpec> huge = read(scenario);
  ASSERT_FALSE(huge.ok());
  EXPECT_TRUE(has_problem(huge.problems(), "/name", "too long"));
  // The message does not echo the 10 MB string.
  EXPECT_LT(huge.problems().front().to_string().size(), 200u);

  scenario = base_scenario();
  scenario[std::string(100000, 'k')] = 1;
  const Result<ScenarioSpec> long_key = read(scenario);
  ASSERT_FALSE(long_key.ok());
  EXPECT_LT(long_key.problems().front().message.size(), 200u);

  for (const double absurd : {1e18, 1e300, -1.0, 0.0, 0.5}) {
    scenario = base_scenario();
    scenario["model"] = {{"base", "llama3-8b"}, {"layers", absurd}};
    EXPECT_TRUE(has_problem(problems_of(scenario), "/model/layers", "")) << absurd;
  }
}

}  // namespace
}  // namespace podsim::scenarios
