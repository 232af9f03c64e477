// Traps in the input as a user meets them at the command line (issue 17):
// a syntax error's whole message and caret, implausible quantities warned
// about on stderr with the output unchanged, GPU types by common name.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "run_binary.h"

namespace podsim::tools_test {
namespace {

using nlohmann::json;

std::string example(const std::string& name) {
  std::ifstream in(std::string(PODSIM_SOURCE_DIR) + "/scenarios/examples/" + name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(InputTrapsCli, ASyntaxErrorPrintsTheWholeReasonAndACaretUnderTheCharacter) {
  const std::string line = "  \"training\": {\"seq_len\": 4096,}";
  const std::string file =
      write_temp("syntax.json", "{\n  \"model\": \"llama3-8b\",\n" + line + "\n}\n");
  const RunResult r = run_podsim({"run", file}, 20);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(r.out.empty());
  // The reason whole, to its last word, then the line and a caret under '}'.
  const std::string message =
      "invalid JSON at line 3, column 32: syntax error while parsing object key - unexpected "
      "'}'; expected string literal (the file must be one JSON object)\n";
  const size_t at = r.err.find(message);
  ASSERT_NE(at, std::string::npos) << r.err;
  const std::string after = r.err.substr(at + message.size());
  EXPECT_EQ(after, "  " + line + "\n  " + std::string(line.find('}'), ' ') + "^\n") << r.err;
}

TEST(InputTrapsCli, ANicBandwidthWithoutUnitWarnsOnStderrAndTheReportIsTheSame) {
  // The example's cluster with the NIC rate written in bits as a bare number
  // (400e9 B/s: 3.2 Tb/s) and as the unit string it was meant to be.
  json scenario = json::parse(example("llama3-8b-dp.json"));
  scenario["cluster"]["scale_out"] = {{"nic_bandwidth", 400e9}};
  const std::string bare = write_temp("nic_bare.json", scenario.dump());
  scenario["cluster"]["scale_out"]["nic_bandwidth"] = "400 GB/s";
  const std::string bytes = write_temp("nic_bytes.json", scenario.dump());
  const RunResult slip = run_podsim({"run", bare, "--json"}, 120);
  ASSERT_EQ(slip.exit_code, 0) << slip.err;
  EXPECT_NE(slip.err.find("podsim: " + bare +
                          ": warning: /cluster/scale_out/nic_bandwidth: 400 GB/s (3200 Gb/s) per "
                          "NIC is more than any NIC"),
            std::string::npos)
      << slip.err;
  EXPECT_NE(slip.err.find("write \"400 Gb/s\""), std::string::npos) << slip.err;
  // Same value, same report: the warning changes nothing but stderr.
  const RunResult same = run_podsim({"run", bytes, "--json"}, 120);
  ASSERT_EQ(same.exit_code, 0) << same.err;
  EXPECT_EQ(same.out, slip.out);
  // The documented example itself says nothing on stderr.
  const RunResult plain = run_podsim(
      {"run", std::string(PODSIM_SOURCE_DIR) + "/scenarios/examples/llama3-8b-dp.json"}, 120);
  EXPECT_EQ(plain.exit_code, 0);
  EXPECT_TRUE(plain.err.empty()) << plain.err;
}

TEST(InputTrapsCli, GpuTypesTakeCommonNamesAndSuggestByPrefix) {
  const std::string file = write_temp("traps_sweep.json", R"({"name": "small sweep",
    "model": {"layers": 8, "hidden": 1024, "ffn_hidden": 4096, "heads": 16, "kv_heads": 4,
              "vocab": 32000},
    "cluster": {"base": "dgx-h100-superpod", "nodes": 2}, "gpus": 16,
    "training": {"seq_len": 2048, "global_batch": 32, "micro_batch": 1},
    "parallelism": {"tp": 2, "pp": 2, "dp": 4, "sequence_parallel": true}})");
  const RunResult full = run_podsim(
      {"sweep", file, "--gpu-types", "h100-sxm-80g", "--top", "3", "--json", "--quiet"}, 120);
  ASSERT_EQ(full.exit_code, 0) << full.err;
  // Two names of one preset: the same sweep, once.
  const RunResult named = run_podsim(
      {"sweep", file, "--gpu-types", "h100,H100 SXM", "--top", "3", "--json", "--quiet"}, 120);
  ASSERT_EQ(named.exit_code, 0) << named.err;
  EXPECT_EQ(named.out, full.out);
  // The parsed document must outlive the loop: a range-for over a member of a
  // temporary reads freed memory.
  const json named_report = json::parse(named.out);
  for (const json& row : named_report.at("results")) {
    EXPECT_EQ(row.at("plan").at("gpu"), "h100-sxm-80g");
  }

  const RunResult typo = run_podsim({"sweep", file, "--gpu-types", "h1000", "--quiet"}, 60);
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_NE(typo.err.find("did you mean 'h100-sxm-80g'?"), std::string::npos) << typo.err;
  EXPECT_EQ(typo.err.find("b200"), std::string::npos) << typo.err;
}

}  // namespace
}  // namespace podsim::tools_test
