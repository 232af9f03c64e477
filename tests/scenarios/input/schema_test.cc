#include "scenarios/input/schema.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "scenarios/input/checker.h"
#include "scenarios/input/quantity.h"
#include "tests/scenarios/input/reader_test_util.h"

namespace podsim::scenarios {
namespace {

std::string_view parent(std::string_view path) { return path.substr(0, path.rfind('/')); }

bool is_container(KeyKind kind) {
  return kind == KeyKind::kObject || kind == KeyKind::kArray || kind == KeyKind::kPresetOrObject ||
         kind == KeyKind::kEnumOrObject || kind == KeyKind::kTextOrArray;
}

void check_table(std::span<const KeyDecl> table) {
  std::set<std::string_view> seen;
  for (const KeyDecl& decl : table) {
    SCOPED_TRACE(std::string(decl.path));
    EXPECT_TRUE(seen.insert(decl.path).second) << "declared twice";
    EXPECT_FALSE(decl.doc.empty());
    if (!decl.path.empty()) {
      const KeyDecl* up = find_decl(table, parent(decl.path));
      ASSERT_NE(up, nullptr) << "parent not declared";
      EXPECT_TRUE(is_container(up->kind)) << "parent is not an object";
      if (decl.path.ends_with("/*")) {
        EXPECT_TRUE(up->kind == KeyKind::kArray || up->kind == KeyKind::kTextOrArray);
      }
      if (up->kind == KeyKind::kArray || up->kind == KeyKind::kTextOrArray) {
        EXPECT_TRUE(decl.path.ends_with("/*"));
      }
    }
    switch (decl.presence) {
      case Presence::kRequired:
      case Presence::kOptional:
        EXPECT_TRUE(decl.default_value.empty());
        break;
      case Presence::kDefault: {
        ASSERT_FALSE(decl.default_value.empty());
        // The declared default converts under the key's own type, unit and range
        // (declared_default aborts otherwise).
        const CheckedValue value = declared_default(decl);
        (void)value;
        break;
      }
      case Presence::kComputed:
        EXPECT_FALSE(decl.default_value.empty()) << "say how it is computed";
        break;
    }
    if (decl.kind == KeyKind::kInteger || decl.kind == KeyKind::kNumber ||
        decl.kind == KeyKind::kQuantity) {
      EXPECT_LT(decl.min, decl.max);
      EXPECT_LE(decl.max, 1e18) << "every number has a finite, sane upper bound";
    }
    if (decl.kind == KeyKind::kQuantity) {
      EXPECT_NE(decl.dimension, Dimension::kNone);
    }
    if (decl.kind == KeyKind::kEnum || decl.kind == KeyKind::kEnumOrObject) {
      EXPECT_GE(allowed_values(decl).size(), 2u);
    }
    if (decl.kind == KeyKind::kPresetOrObject) {
      EXPECT_FALSE(allowed_values(decl).empty()) << "no presets in " << decl.allowed;
      EXPECT_NE(find_decl(table, std::string(decl.path) + "/base"), nullptr);
    }
  }
}

TEST(Schema, ScenarioTableIsConsistent) { check_table(scenario_keys()); }
TEST(Schema, ValidationTableIsConsistent) { check_table(validation_keys()); }

TEST(Schema, ContractKeysAreDeclared) {
  // scenario-format.md, every key of version 1.
  const char* contract[] = {"/name",
                            "/model",
                            "/cluster",
                            "/gpus",
                            "/training",
                            "/parallelism",
                            "/options",
                            "/model/layers",
                            "/model/hidden",
                            "/model/ffn_hidden",
                            "/model/heads",
                            "/model/vocab",
                            "/model/kv_heads",
                            "/model/head_dim",
                            "/model/mlp",
                            "/model/norm",
                            "/model/tied_embeddings",
                            "/model/moe",
                            "/model/moe/experts",
                            "/model/moe/top_k",
                            "/model/moe/ffn_hidden",
                            "/model/moe/shared_experts",
                            "/cluster/gpu",
                            "/cluster/nodes",
                            "/cluster/gpus_per_node",
                            "/cluster/scale_up",
                            "/cluster/scale_up/bandwidth",
                            "/cluster/scale_up/latency",
                            "/cluster/scale_up/domain",
                            "/cluster/scale_out",
                            "/cluster/scale_out/nic_bandwidth",
                            "/cluster/scale_out/nics_per_node",
                            "/cluster/scale_out/latency",
                            "/cluster/scale_out/tiers",
                            "/cluster/scale_out/tiers/*/name",
                            "/cluster/scale_out/tiers/*/nodes",
                            "/cluster/scale_out/tiers/*/oversubscription",
                            "/cluster/price_per_gpu_hour",
                            "/cluster/gpu/name",
                            "/cluster/gpu/peak_flops/bf16",
                            "/cluster/gpu/peak_flops/fp16",
                            "/cluster/gpu/peak_flops/fp8",
                            "/cluster/gpu/peak_flops/tf32",
                            "/cluster/gpu/peak_flops/fp32",
                            "/cluster/gpu/hbm/capacity",
                            "/cluster/gpu/hbm/bandwidth",
                            "/cluster/gpu/l2/capacity",
                            "/cluster/gpu/l2/bandwidth",
                            "/cluster/gpu/sms",
                            "/cluster/gpu/profile",
                            "/training/seq_len",
                            "/training/global_batch",
                            "/training/micro_batch",
                            "/training/precision",
                            "/training/optimizer",
                            "/parallelism/dp",
                            "/parallelism/tp",
                            "/parallelism/pp",
                            "/parallelism/cp",
                            "/parallelism/ep",
                            "/parallelism/sequence_parallel",
                            "/parallelism/zero",
                            "/parallelism/shard_group",
                            "/parallelism/pipeline/schedule",
                            "/parallelism/pipeline/virtual_stages",
                            "/parallelism/context/algorithm",
                            "/parallelism/recompute",
                            "/parallelism/recompute/every",
                            "/parallelism/order",
                            "/options/overlap/dp",
                            "/options/overlap/tp",
                            "/options/overlap/pp",
                            "/options/overlap/cp",
                            "/options/flash_attention"};
  for (const char* path : contract) EXPECT_NE(find_decl(scenario_keys(), path), nullptr) << path;
  const char* validation[] = {"/cases",
                              "/cases/*/id",
                              "/cases/*/source",
                              "/cases/*/scenario",
                              "/cases/*/measured/step_time_s",
                              "/cases/*/measured/tflops_per_gpu",
                              "/cases/*/measured/mfu",
                              "/cases/*/measured/memory_peak_gib",
                              "/cases/*/notes"};
  for (const char* path : validation) {
    EXPECT_NE(find_decl(validation_keys(), path), nullptr) << path;
  }
}

TEST(Schema, ContractEnumsAndDefaults) {
  EXPECT_EQ(allowed_values(*find_decl(scenario_keys(), "/parallelism/pipeline/schedule")),
            (std::vector<std::string>{"gpipe", "1f1b", "interleaved_1f1b", "zero_bubble",
                                      "dualpipe"}));  // 1.2 adds dualpipe
  EXPECT_EQ(allowed_values(*find_decl(scenario_keys(), "/parallelism/context/algorithm")),
            (std::vector<std::string>{"ring", "ulysses", "all_gather"}));
  EXPECT_EQ(allowed_values(*find_decl(scenario_keys(), "/training/precision")),
            (std::vector<std::string>{"bf16", "fp16", "fp8", "fp4", "int8",
                                      "fp32"}));  // 1.2 adds fp4 and int8
  EXPECT_EQ(
      std::get<std::string>(declared_default(*find_decl(scenario_keys(), "/parallelism/order"))),
      "tp-cp-ep-dp-pp");
  EXPECT_EQ(std::get<bool>(declared_default(*find_decl(scenario_keys(), "/options/overlap/tp"))),
            false);
  EXPECT_EQ(std::get<bool>(declared_default(*find_decl(scenario_keys(), "/options/overlap/dp"))),
            true);
  EXPECT_EQ(
      std::get<int64_t>(declared_default(*find_decl(scenario_keys(), "/training/micro_batch"))), 1);
}

TEST(Schema, DescribeCoversEveryDeclaredKey) {
  const std::string text = describe_text();
  for (const auto table : {scenario_keys(), validation_keys()}) {
    for (const KeyDecl& decl : table) {
      const std::string path = decl.path.empty() ? "/" : std::string(decl.path);
      EXPECT_NE(text.find("\n" + path + " "), std::string::npos) << path;
      EXPECT_NE(text.find(std::string(decl.doc)), std::string::npos) << path;
      EXPECT_NE(text.find(default_text(decl)), std::string::npos) << path;
      if (!allowed_text(decl).empty()) {
        EXPECT_NE(text.find(allowed_text(decl)), std::string::npos) << path;
      }
    }
  }
  const nlohmann::json described = nlohmann::json::parse(describe_json_text());
  EXPECT_EQ(described["scenario"].size(), scenario_keys().size());
  EXPECT_EQ(described["validation"].size(), validation_keys().size());
  EXPECT_EQ(described["units"].size(), unit_spellings().size());
}

TEST(Schema, FuzzDictionaryHoldsEveryKeyValueAndUnit) {
  // tests/fuzz/scenario.dict is written from `podsim describe --json` (tools/fuzz
  // dict); a key, value or unit added since is missing from the fuzzer's words.
  const std::string dict = testing::read_file(testing::source_path("tests/fuzz/scenario.dict"));
  const auto holds = [&](const std::string& word) {
    return dict.find("\n\"" + word + "\"\n") != std::string::npos;
  };
  for (const auto table : {scenario_keys(), validation_keys()}) {
    for (const KeyDecl& decl : table) {
      const std::string name(decl.path.substr(decl.path.rfind('/') + 1));
      if (!name.empty() && name != "*") {
        EXPECT_TRUE(holds("\\\"" + name + "\\\":")) << decl.path << ": run tools/fuzz dict";
      }
      if (decl.kind == KeyKind::kEnum) {
        for (const std::string& value : allowed_values(decl)) {
          EXPECT_TRUE(holds("\\\"" + value + "\\\"")) << decl.path << " " << value;
        }
      }
    }
  }
  for (const UnitSpelling& unit : unit_spellings()) {
    const bool ascii = std::all_of(unit.name.begin(), unit.name.end(),
                                   [](char c) { return c > 0x20 && c < 0x7F; });
    if (ascii) {
      EXPECT_TRUE(holds(" " + unit.name)) << unit.name;
    }
  }
}

TEST(Schema, PatternOf) {
  EXPECT_EQ(pattern_of("/cluster/scale_out/tiers/12/name"), "/cluster/scale_out/tiers/*/name");
  EXPECT_EQ(pattern_of("/model/layers"), "/model/layers");
  EXPECT_EQ(pattern_of(""), "");
}

}  // namespace
}  // namespace podsim::scenarios
