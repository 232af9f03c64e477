// The software's communication mechanisms in the simulated step: pipeline
// transfers a framework waits for (software.pipeline.p2p) and its
// tensor-parallel overlap (software.tp_overlap), with what the reader makes of
// the plan's overlap options for them.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "scenarios/input/reader.h"
#include "scenarios/step/simulate.h"
#include "scenarios/step/work_pricing.h"
#include "tests/scenarios/step/step_test_util.h"

namespace podsim::scenarios {
namespace {

using nlohmann::json;

/// Llama 3 8B on two 8-GPU H100 nodes: tp 4 with sequence parallelism, pp 2.
json llama8b_tp4_pp2(const json& software) {
  json s = json::parse(R"({
    "model": "llama3-8b",
    "cluster": {"base": "dgx-h100-superpod", "nodes": 2},
    "training": {"seq_len": 8192, "global_batch": 16},
    "parallelism": {"dp": 2, "tp": 4, "pp": 2, "sequence_parallel": true},
    "options": {"overlap": {"tp": true}}
  })");
  s["software"] = software;
  return s;
}

ScenarioSpec read_ok(const json& scenario) { return testing::read(scenario.dump()); }

bool warns(const ScenarioSpec& spec, const std::string& part) {
  for (const std::string& w : spec.warnings) {
    if (w.find(part) != std::string::npos) return true;
  }
  return false;
}

TEST(OverlapMechanisms, AFrameworkThatWaitsForEveryTransferBlocksOnIt) {
  // megatron-lm-2021: batch_isend_irecv, wait, torch.cuda.synchronize().
  const json blocking = {{"base", "megatron-core"}, {"pipeline", {{"p2p", "blocking_sync"}}}};
  const ScenarioSpec waits = read_ok(llama8b_tp4_pp2(blocking));
  EXPECT_FALSE(waits.options.overlap_pp);
  EXPECT_FALSE(warns(waits, "overlap.pp"));  // the option was the default
  json asked = llama8b_tp4_pp2(blocking);
  asked["options"]["overlap"]["pp"] = true;
  EXPECT_TRUE(warns(read_ok(asked), "blocking_sync"));

  const ScenarioSpec async = read_ok(llama8b_tp4_pp2("megatron-core"));
  EXPECT_TRUE(async.options.overlap_pp);
  const Result<Report> slow = simulate(waits);
  const Result<Report> fast = simulate(async);
  ASSERT_TRUE(slow.ok() && fast.ok());
  EXPECT_GT(slow.value().breakdown.exposed_comm.pp, fast.value().breakdown.exposed_comm.pp);
  EXPECT_GT(slow.value().step_time_s, fast.value().step_time_s);
}

TEST(OverlapMechanisms, TpOverlapNeedsTheSoftwareAndSequenceParallelism) {
  // torchtitan without compile has no AsyncTP: its TP collectives block.
  const ScenarioSpec eager = read_ok(llama8b_tp4_pp2("torchtitan"));
  EXPECT_FALSE(eager.options.overlap_tp);
  EXPECT_TRUE(warns(eager, "software.tp_overlap.method none"));
  // TE userbuffers overlap sequence parallelism's gathers and reductions.
  json no_sp = llama8b_tp4_pp2("megatron-core");
  no_sp["parallelism"]["sequence_parallel"] = false;
  EXPECT_TRUE(warns(read_ok(no_sp), "sequence parallelism"));
  EXPECT_TRUE(read_ok(llama8b_tp4_pp2("megatron-core")).options.overlap_tp);
}

TEST(OverlapMechanisms, AGemmCutIntoChunksPaysEachChunksWaves) {
  // Under TE userbuffers the QKV GEMM beside the ring-exchange all-gather
  // runs in tp = 4 row chunks; priced here chunk by chunk from the GPU model.
  const testing::StepParts parts(read_ok(llama8b_tp4_pp2("megatron-core")));
  const strategies::BuildResult& built = parts.built;
  ASSERT_TRUE(built.schedule.has_value());
  const hwmodels::GpuModel& gpu = parts.gpu;
  const StepHardware hardware = parts.hardware();  // the pricer keeps a reference
  Pricer pricer(*built.schedule, hardware);
  int checked = 0;
  for (size_t w = 0; w < built.schedule->works.size() && checked == 0; ++w) {
    const auto& segments = built.schedule->works[w].segments;
    for (size_t s = 0; s < segments.size() && checked == 0; ++s) {
      for (const strategies::Op& op : segments[s].ops) {
        if (op.name != "attn_input_gather") continue;
        ASSERT_EQ(op.collective.gemm_chunks, 4);
        const auto qkv = static_cast<size_t>(op.collective.overlap_op);
        const strategies::Op& gemm = segments[s].ops[qkv];
        ASSERT_EQ(gemm.name, "qkv");
        ASSERT_EQ(gemm.gemm.m % 4, 0);
        const double chunk =
            gpu.gemm_time(gemm.gemm.m / 4, gemm.gemm.n, gemm.gemm.k, gemm.gemm.batch, gemm.format)
                .time_s;
        const auto work = static_cast<int32_t>(w);
        EXPECT_NEAR(pricer.overlapped_op_time(work, s, qkv, 4), 4 * chunk, 1e-12);
        EXPECT_GT(pricer.overlapped_op_time(work, s, qkv, 4), pricer.op_time(work, s, qkv));
        EXPECT_DOUBLE_EQ(pricer.overlapped_op_time(work, s, qkv, 1), pricer.op_time(work, s, qkv));
        ++checked;
        break;
      }
    }
  }
  EXPECT_EQ(checked, 1);
}

}  // namespace
}  // namespace podsim::scenarios
