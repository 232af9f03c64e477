#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "scenarios/input/reader.h"
#include "tests/scenarios/test_units.h"

namespace podsim::scenarios::testing {

/// A small valid scenario the tests mutate: Llama 3 8B, plain DP on 64 H100.
inline nlohmann::json base_scenario() {
  return nlohmann::json::parse(R"({
    "name": "base",
    "model": "llama3-8b",
    "cluster": {"base": "dgx-h100-superpod", "nodes": 8},
    "training": {"seq_len": 4096, "global_batch": 512, "micro_batch": 1},
    "parallelism": {"dp": 64, "zero": 1}
  })");
}

inline Result<ScenarioSpec> read(const nlohmann::json& scenario) {
  return read_scenario_text(scenario.dump());
}

inline ScenarioSpec read_ok(const nlohmann::json& scenario) {
  Result<ScenarioSpec> spec = read(scenario);
  std::string all;
  for (const Problem& p : spec.problems()) all += p.to_string() + "\n";
  EXPECT_TRUE(spec.ok()) << all;
  return spec.ok() ? std::move(spec).value() : ScenarioSpec{};
}

/// All problems, one per line, for failure messages.
inline std::string problems_text(const std::vector<Problem>& problems) {
  std::string all;
  for (const Problem& p : problems) all += p.to_string() + "\n";
  return all;
}

/// True if some problem is at exactly `path` and its message or hint holds `fragment`.
inline bool has_problem(const std::vector<Problem>& problems, const std::string& path,
                        const std::string& fragment) {
  for (const Problem& p : problems) {
    if (p.path == path && (p.message + " " + p.hint).find(fragment) != std::string::npos) {
      return true;
    }
  }
  return false;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

inline std::string source_path(const std::string& relative) {
  return std::string(PODSIM_SOURCE_DIR) + "/" + relative;
}

}  // namespace podsim::scenarios::testing
