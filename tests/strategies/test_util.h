#pragma once

#include <gtest/gtest.h>

#include <numeric>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "strategies/job.h"
#include "strategies/memory.h"
#include "strategies/schedule.h"
#include "strategies/workload.h"
#include "tests/strategies/model_presets.h"

namespace podsim::strategies::testing {

/// A job on a preset model with the given batch; plan left at defaults.
inline Job preset_job(std::string_view model, int64_t seq_len, int64_t global_batch,
                      int64_t micro_batch = 1) {
  Job job;
  job.model = *testing::model_preset(model);
  job.training.seq_len = seq_len;
  job.training.global_batch = global_batch;
  job.training.micro_batch = micro_batch;
  return job;
}

/// The schedule of a job that must build: each problem fails the test.
inline Schedule built_schedule(const Job& job, Scope scope) {
  BuildResult r = build_schedule(job, scope);
  for (const PlanProblem& p : r.problems) ADD_FAILURE() << p.path << ": " << p.message;
  return std::move(*r.schedule);
}

/// HBM bytes the memory-bound ops of `ops` move.
inline double memory_bytes(const std::vector<Op>& ops) {
  double total = 0;
  for (const Op& op : ops) {
    if (op.kind == OpKind::kMemoryBound) total += static_cast<double>(op.count) * op.memory.bytes;
  }
  return total;
}

/// Bytes the first layer of a one-layer chunk keeps for its backward.
inline double kept_bytes(const Job& job) {
  ChunkInfo chunk;
  chunk.layer_begin = 0;
  chunk.layer_end = 1;
  const std::vector<double> kept = kept_tensors(job, layer_tensors(job), chunk, 0);
  return std::accumulate(kept.begin(), kept.end(), 0.0);
}

/// A copy of the op of `ops` named `name` (a copy: `ops` is often a
/// temporary), or nothing.
inline std::optional<Op> op_named(const std::vector<Op>& ops, std::string_view name) {
  for (const Op& op : ops) {
    if (op.name == name) return op;
  }
  return std::nullopt;
}

/// A one-line description of a job's plan for test traces.
inline std::string describe(const Job& job) {
  const ParallelPlan& p = job.plan;
  return job.model.name + " dp" + std::to_string(p.dp) + " tp" + std::to_string(p.tp) + " pp" +
         std::to_string(p.pp) + " cp" + std::to_string(p.cp) + " ep" + std::to_string(p.ep) + " v" +
         std::to_string(p.virtual_stages) + " sched" +
         std::to_string(static_cast<int>(p.schedule)) + " zero" + std::to_string(p.zero) +
         " shard" + std::to_string(p.shard_group) + " recompute" +
         std::to_string(static_cast<int>(p.recompute.mode)) + " overlap_dp" +
         std::to_string(job.options.overlap_dp);
}

}  // namespace podsim::strategies::testing
