// Measured beside predicted, fed with synthetic measurements: medians, errors,
// class sums, the per-layer verdict, and the text and JSON reports.
#include "calibration/execute_report.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace podsim::calibration {
namespace {

ExecOp make_op(const char* name, ExecStep step, OpClass c, ExecPhase phase, double predicted_s) {
  ExecOp op;
  op.name = name;
  op.step = step;
  op.op_class = c;
  op.phase = phase;
  op.predicted_s = predicted_s;
  op.predicted_bound = c == OpClass::kCollective ? "ring/simple" : "compute";
  return op;
}

// Two layers of: a GEMM (1 ms predicted), attention (2 ms), a norm (0.1 ms)
// and an all-reduce (0.5 ms); an optimizer of one op (3 ms).
ExecPlan small_plan() {
  ExecPlan p;
  p.scenario = "synthetic";
  p.predicted_gpu = "H200";
  p.prediction_source = "datasheet";
  p.layer.batch = 1;
  p.layer.seq = 1024;
  p.layer.tokens = 1024;
  p.layer.norm_tokens = 1024;
  p.layer.hidden = 4096;
  p.layer.heads = 32;
  p.layer.kv_heads = 8;
  p.layer.head_dim = 128;
  p.layer.ffn = 14336;
  p.layers = 2;
  p.layer_ops.push_back(make_op("qkv", ExecStep::kQkv, OpClass::kGemm, ExecPhase::kForward, 1e-3));
  p.layer_ops.back().gemm = {1024, 6144, 4096, 1};
  p.layer_ops.push_back(
      make_op("attn_core", ExecStep::kAttnCore, OpClass::kAttention, ExecPhase::kForward, 2e-3));
  p.layer_ops.push_back(
      make_op("attn_norm", ExecStep::kAttnNorm, OpClass::kMemoryBound, ExecPhase::kForward, 1e-4));
  p.layer_ops.back().bytes = 16e6;
  p.layer_ops.push_back(make_op("attn_reduce", ExecStep::kAttnReduce, OpClass::kCollective,
                                ExecPhase::kForward, 5e-4));
  p.layer_ops.back().bytes = 8e6;
  p.layer_ops.back().group_size = 2;
  p.optimizer_params = 1e6;
  p.optimizer_ops.push_back(
      make_op("adam_step", ExecStep::kAdamStep, OpClass::kOptimizer, ExecPhase::kOptimizer, 3e-3));
  p.optimizer_ops.back().bytes = 30e6;
  p.notes = {"a note"};
  return p;
}

// Measured: GEMM 0.8 ms (odd count), attention 2.5 ms (even count, middle
// pair 2.4 and 2.6), norm 0.1 ms, collective not measured, optimizer 4 ms.
ExecMeasurement small_measurement() {
  ExecMeasurement m;
  m.device_name = "NVIDIA H200";
  m.device_count = 1;
  m.warmup_passes = 1;
  m.timed_passes = 2;
  m.layer_ops.resize(4);
  m.layer_ops[0].times_s = {0.9e-3, 0.8e-3, 0.7e-3};
  m.layer_ops[1].times_s = {2.6e-3, 9e-3, 2.4e-3, 1e-3};
  m.layer_ops[2].times_s = {1e-4};
  m.layer_ops[3].not_measured = "not measured (1 GPU)";
  m.optimizer_ops.resize(1);
  m.optimizer_ops[0].times_s = {4e-3};
  m.pass_s = {7.0e-3, 6.6e-3, 6.8e-3};
  m.optimizer_pass_s = {4e-3, 4e-3};
  m.checks = {{"check a", true, ""}, {"check b", true, "fine"}};
  return m;
}

TEST(ExecuteReport, MediansErrorsAndClassSums) {
  const ExecPlan plan = small_plan();
  const ExecMeasurement m = small_measurement();
  const ExecuteReport r = compare(plan, &m);
  ASSERT_EQ(r.ops.size(), 5u);
  EXPECT_DOUBLE_EQ(*r.ops[0].measured_s, 0.8e-3);
  EXPECT_NEAR(*r.ops[0].error, 1e-3 / 0.8e-3 - 1, 1e-12);
  EXPECT_DOUBLE_EQ(*r.ops[1].measured_s, 2.5e-3);
  EXPECT_NEAR(*r.ops[1].error, -0.2, 1e-12);
  EXPECT_EQ(r.ops[0].per_pass, 2);  // one per layer
  EXPECT_EQ(r.ops[4].per_pass, 1);  // the optimizer runs once
  EXPECT_FALSE(r.ops[3].measured_s.has_value());
  EXPECT_EQ(r.ops[3].status, "not measured (1 GPU)");
  EXPECT_FALSE(r.ops[3].error.has_value());
  EXPECT_EQ(r.ops[2].model_bytes, 16e6);
  EXPECT_GT(r.ops[2].executor_bytes, 0);

  const ClassRow& gemm = r.classes[static_cast<size_t>(OpClass::kGemm)];
  EXPECT_EQ(gemm.ops, 1);
  EXPECT_DOUBLE_EQ(gemm.measured_s, 2 * 0.8e-3);
  EXPECT_DOUBLE_EQ(gemm.predicted_s, 2 * 1e-3);
  const ClassRow& coll = r.classes[static_cast<size_t>(OpClass::kCollective)];
  EXPECT_EQ(coll.measured_ops, 0);
  EXPECT_FALSE(coll.error.has_value());
  EXPECT_DOUBLE_EQ(coll.predicted_all_s, 2 * 5e-4);

  // The pass: compute ops only, 2 x (1 + 2 + 0.1) ms predicted; measured is
  // the median of the event-timed passes, 6.8 ms.
  EXPECT_NEAR(r.predicted_pass_s, 6.2e-3, 1e-15);
  EXPECT_DOUBLE_EQ(*r.measured_pass_s, 6.8e-3);
  EXPECT_NEAR(*r.measured_ops_s, 2 * (0.8e-3 + 2.5e-3 + 1e-4), 1e-15);
  EXPECT_NEAR(*r.pass_error, 6.2 / 6.8 - 1, 1e-12);
  EXPECT_NEAR(r.predicted_layer_s, 3.1e-3, 1e-15);
  EXPECT_DOUBLE_EQ(*r.measured_layer_s, 3.4e-3);
  EXPECT_TRUE(r.layer_within(0.10));  // -8.8%
  EXPECT_FALSE(r.layer_within(0.05));
  EXPECT_NEAR(*r.overall_error, (6.2e-3 + 3e-3) / (6.8e-3 + 4e-3) - 1, 1e-12);
  EXPECT_DOUBLE_EQ(*r.measured_optimizer_s, 4e-3);
  EXPECT_TRUE(r.all_checks_passed());
}

TEST(ExecuteReport, AFailedCheckOrAnErrorFailsTheRun) {
  ExecMeasurement m = small_measurement();
  m.checks[1].passed = false;
  EXPECT_FALSE(compare(small_plan(), &m).all_checks_passed());
  m = small_measurement();
  m.errors.push_back("execute: out of memory");
  EXPECT_FALSE(compare(small_plan(), &m).all_checks_passed());
}

TEST(ExecuteReport, DryRunHasPredictionsOnly) {
  const ExecuteReport r = compare(small_plan(), nullptr);
  EXPECT_FALSE(r.measured);
  EXPECT_FALSE(r.measured_pass_s.has_value());
  EXPECT_FALSE(r.layer_within(0.5));
  for (const OpRow& row : r.ops) {
    EXPECT_FALSE(row.measured_s.has_value());
    EXPECT_EQ(row.status, "not run (dry run)");
  }
  const std::string text = format_execute_text(r);
  EXPECT_NE(text.find("dry run"), std::string::npos);
  EXPECT_EQ(text.find("within 10%"), std::string::npos);
  const nlohmann::json j = nlohmann::json::parse(execute_report_json(r));
  EXPECT_FALSE(j["measured"].get<bool>());
  EXPECT_TRUE(j["pass"]["measured_s"].is_null());
  EXPECT_NEAR(j["pass"]["predicted_s"].get<double>(), 6.2e-3, 1e-15);
}

TEST(ExecuteReport, MismatchedMeasurementIsRefused) {
  ExecMeasurement m = small_measurement();
  m.layer_ops.pop_back();
  EXPECT_THROW(compare(small_plan(), &m), std::invalid_argument);
}

TEST(ExecuteReport, TextAndJsonCarryTheNumbers) {
  const ExecMeasurement m = small_measurement();
  const ExecuteReport r = compare(small_plan(), &m);
  const std::string text = format_execute_text(r);
  for (const char* want : {"podsim execute: synthetic", "GPU: NVIDIA H200 (1 visible)", "qkv",
                           "0.800 ms", "1.000 ms", "+25.0%", "-20.0%", "not measured (1 GPU)",
                           "within 10%: yes", "passed  check a", "  - a note"}) {
    EXPECT_NE(text.find(want), std::string::npos) << want << "\n" << text;
  }
  const nlohmann::json j = nlohmann::json::parse(execute_report_json(r));
  EXPECT_EQ(j["ops"].size(), 5u);
  EXPECT_EQ(j["ops"][0]["name"], "qkv");
  EXPECT_DOUBLE_EQ(j["ops"][0]["measured_s"].get<double>(), 0.8e-3);
  EXPECT_TRUE(j["ops"][3]["measured_s"].is_null());
  EXPECT_EQ(j["classes"]["gemm"]["measured_ops"], 1);
  EXPECT_TRUE(j["layer_fwd_bwd"]["within_10_percent"].get<bool>());
  EXPECT_TRUE(j["checks_passed"].get<bool>());
  // Same input, same bytes.
  EXPECT_EQ(execute_report_json(r), execute_report_json(compare(small_plan(), &m)));
}

TEST(ExecuteReport, MedianAndRelativeError) {
  EXPECT_FALSE(median_if_measured({}).has_value());
  EXPECT_DOUBLE_EQ(*median_if_measured({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(*median_if_measured({4, 1, 3, 2}), 2.5);
  EXPECT_FALSE(relative_error(1, 0).has_value());
  EXPECT_DOUBLE_EQ(*relative_error(1.1, 1.0), 1.1 - 1.0);
}

}  // namespace
}  // namespace podsim::calibration
