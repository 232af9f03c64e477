#pragma once

// Small scenarios for the sweep tests: models and clusters small enough that
// a whole sweep, or a simulation of every plan of one, takes seconds.
#include <gtest/gtest.h>

#include <string>

#include "scenarios/input/reader.h"
#include "scenarios/sweep/sweep.h"
#include "tests/scenarios/input/reader_test_util.h"

namespace podsim::scenarios::sweep_testing {

inline ScenarioSpec read_ok(const std::string& json) {
  return testing::read_ok(nlohmann::json::parse(json));
}

/// An 8-layer Llama-style model (GQA 16 heads / 4 KV heads, SwiGLU) on
/// `nodes` DGX H100 nodes of the SuperPOD preset; `gpu` overrides the GPU
/// object (to make memory tight), `extra` adds top-level keys.
inline std::string small_scenario(int nodes, int gpus, const std::string& parallelism,
                                  const std::string& gpu = "\"h100-sxm-80g\"",
                                  int global_batch = 32, int seq_len = 2048) {
  return R"({"name": "small sweep test",
    "model": {"layers": 8, "hidden": 1024, "ffn_hidden": 4096, "heads": 16, "kv_heads": 4,
              "vocab": 32000, "mlp": "swiglu", "norm": "rmsnorm"},
    "cluster": {"base": "dgx-h100-superpod", "nodes": )" +
         std::to_string(nodes) + R"(, "gpu": )" + gpu + R"(},
    "gpus": )" +
         std::to_string(gpus) +
         R"(,
    "training": {"seq_len": )" +
         std::to_string(seq_len) + R"(, "global_batch": )" + std::to_string(global_batch) +
         R"(, "micro_batch": 1},
    "parallelism": )" +
         parallelism + "}";
}

/// The scenario's own hardware as the only target.
inline std::vector<SweepTarget> own_target(const ScenarioSpec& spec) {
  Result<SweepTarget> t = make_sweep_target(spec, spec.gpus, std::nullopt);
  EXPECT_TRUE(t.ok());
  if (!t.ok()) return {};
  return {t.value()};
}

inline SweepOutcome sweep_ok(const ScenarioSpec& spec, const std::vector<SweepTarget>& targets,
                             const SweepOptions& options) {
  Result<SweepOutcome> r = run_sweep(spec, targets, options);
  EXPECT_TRUE(r.ok());
  if (!r.ok()) return {};
  return r.value();
}

/// The small scenario's own plan.
constexpr const char* kPlan = R"({"tp": 2, "pp": 2, "dp": 4, "sequence_parallel": true})";

/// Sweeps of small_scenario(2, 16, kPlan), micro-batches 1 and 2, top 5, two
/// worker threads.
class SmallSweep : public ::testing::Test {
 protected:
  void SetUp() override {
    spec_ = read_ok(small_scenario(2, 16, kPlan));
    options_.space.micro_batches = {1, 2};
    options_.top_k = 5;
    options_.jobs = 2;
  }
  ScenarioSpec spec_;
  SweepOptions options_;
};

}  // namespace podsim::scenarios::sweep_testing
