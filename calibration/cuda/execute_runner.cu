// `podsim execute` on the GPU: the reference check, the spot-checked pass,
// the timed passes and the collectives, each a section that records its
// failure and lets the rest go on unless the CUDA context is lost.

#include <algorithm>
#include <cstdio>

#include "calibration/cuda/common.cuh"
#include "calibration/cuda/cublaslt.cuh"
#include "calibration/cuda/execute_check.cuh"
#include "calibration/cuda/execute_layer.cuh"
#include "calibration/cuda/execute_runner.h"
#include "calibration/cuda/multi_gpu.cuh"

namespace podsim::calibration::gpu {
namespace {

std::string gigabytes(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GB", bytes / 1e9);
  return buf;
}

void mark_unmeasured(ExecMeasurement& m, const std::string& why) {
  for (auto* list : {&m.layer_ops, &m.optimizer_ops}) {
    for (OpMeasurement& op : *list) {
      if (op.times_s.empty() && op.not_measured.empty()) op.not_measured = why;
    }
  }
}

/// Warm-up and timed passes, every op instance between two CUDA events.
void timed_passes(LayerExecutor& ex, cudaStream_t stream, const ExecuteRunOptions& options,
                  int64_t& step, ExecMeasurement& m) {
  const ExecPlan& plan = ex.plan();
  const std::vector<PassItem> items = pass_items(plan, false);
  const auto first_optimizer = static_cast<size_t>(
      std::find_if(items.begin(), items.end(), [](const PassItem& i) { return i.optimizer; }) -
      items.begin());
  // Everything is queued back to back and read once at the end, so that the
  // host never leaves the GPU idle between ops (the queue runs ahead).
  std::vector<std::vector<Event>> events(static_cast<size_t>(options.timed_passes));
  for (auto& pass : events) {
    pass.reserve(items.size() + 1);
    for (size_t k = 0; k <= items.size(); ++k) pass.emplace_back();
  }
  for (int w = 0; w < options.warmup_passes; ++w) {
    ex.zero_grads();
    for (const PassItem& item : items) ex.run_item(item, CollectiveMode::kSkip, step);
    ++step;
  }
  for (auto& pass : events) {
    ex.zero_grads();  // between the passes' events: not timed
    for (size_t k = 0; k < items.size(); ++k) {
      PODSIM_CUDA_CHECK(cudaEventRecord(pass[k].get(), stream));
      ex.run_item(items[k], CollectiveMode::kSkip, step);
    }
    PODSIM_CUDA_CHECK(cudaEventRecord(pass[items.size()].get(), stream));
    ++step;
  }
  PODSIM_CUDA_CHECK(cudaStreamSynchronize(stream));
  const auto elapsed = [](const Event& a, const Event& b) {
    float ms = 0;
    PODSIM_CUDA_CHECK(cudaEventElapsedTime(&ms, a.get(), b.get()));
    return static_cast<double>(ms) * 1e-3;
  };
  for (const auto& pass : events) {
    for (size_t k = 0; k < items.size(); ++k) {
      const double t = elapsed(pass[k], pass[k + 1]);
      auto& list = items[k].optimizer ? m.optimizer_ops : m.layer_ops;
      list[items[k].op].times_s.push_back(t);
    }
    m.pass_s.push_back(elapsed(pass[0], pass[first_optimizer]));
    if (first_optimizer < items.size()) {
      m.optimizer_pass_s.push_back(elapsed(pass[first_optimizer], pass[items.size()]));
    }
  }
}

Coll coll_of(ExecCollective kind) {
  switch (kind) {
    case ExecCollective::kAllReduce:
      return Coll::kAllReduce;
    case ExecCollective::kAllGather:
      return Coll::kAllGather;
    case ExecCollective::kReduceScatter:
      return Coll::kReduceScatter;
  }
  return Coll::kAllReduce;
}

/// The layer's collectives, each alone over GPUs 0..group-1 through NCCL
/// (bf16, the op's nccl-tests size), or why they cannot be.
void collectives(const ExecPlan& plan, int devices, const ExecuteRunOptions& options,
                 ExecMeasurement& m) {
  std::vector<size_t> runnable;
  for (size_t i = 0; i < plan.layer_ops.size(); ++i) {
    const ExecOp& op = plan.layer_ops[i];
    if (op.op_class != OpClass::kCollective) continue;
    OpMeasurement& om = m.layer_ops[i];
    if (devices < 2) {
      om.not_measured = "not measured (1 GPU)";
    } else if (op.group_size > devices) {
      om.not_measured = "not measured (needs " + std::to_string(op.group_size) + " GPUs, " +
                        std::to_string(devices) + " visible)";
    } else {
#if PODSIM_HAVE_NCCL
      runnable.push_back(i);
#else
      om.not_measured = "not measured (podsim was built without NCCL)";
#endif
    }
  }
  if (runnable.empty()) return;
#if PODSIM_HAVE_NCCL
  // Every collective of a layer is over its TP group: one group size.
  const int n = static_cast<int>(plan.layer_ops[runnable.front()].group_size);
  size_t max_bytes = 0;
  for (size_t i : runnable) {
    max_bytes = std::max(max_bytes, static_cast<size_t>(plan.layer_ops[i].bytes));
  }
  CollectiveRunner runner(n, max_bytes, ncclBfloat16);
  CheckOutcome check{"NCCL collectives' outputs (8 samples each) against the host", true, ""};
  for (size_t i : runnable) {
    const ExecOp& op = plan.layer_ops[i];
    if (op.group_size != n) {
      m.layer_ops[i].not_measured = "not measured (a second group size)";
      continue;
    }
    if (options.progress) options.progress("collective " + op.name);
    const auto bytes = static_cast<size_t>(op.bytes);
    m.layer_ops[i].times_s = runner.time(coll_of(op.collective), bytes, options.warmup_passes + 1,
                                         std::max(3, options.timed_passes));
    if (!runner.check(coll_of(op.collective), bytes)) {
      check.passed = false;
      check.detail += " " + op.name;
    }
  }
  PODSIM_CUDA_CHECK(cudaSetDevice(options.device));
  if (!check.passed) check.detail = "wrong values in:" + check.detail;
  m.checks.push_back(std::move(check));
#else
  (void)options;
#endif
}

}  // namespace

ExecMeasurement run_execute(const ExecPlan& plan, const ExecPlan& check_plan,
                            const ExecuteRunOptions& options) {
  cudaDeviceProp prop{};
  const int count = select_device(options.device, prop);
  const auto progress = [&](const std::string& line) {
    if (options.progress) options.progress(line);
  };

  ExecMeasurement m;
  m.device_name = prop.name;
  m.device_count = count;
  const SoftwareVersions v = software_versions();
  m.software = "driver " + v.driver + ", runtime " + v.runtime + ", cuBLASLt " + v.cublas +
               (v.nccl.empty() ? "" : ", NCCL " + v.nccl);
  m.warmup_passes = options.warmup_passes;
  m.timed_passes = options.timed_passes;
  m.layer_ops.resize(plan.layer_ops.size());
  m.optimizer_ops.resize(plan.optimizer_ops.size());

  Stream stream;
  LtHandle lt;
  bool lost =
      run_section("setup", options.device, m.errors, [&] { prepare_attention_kernels(prop); });
  if (!lost) {
    progress("reference check at small shapes");
    lost = run_section("reference check", options.device, m.errors, [&] {
      const std::vector<CheckOutcome> c = check_against_reference(check_plan, stream.get(), lt.h);
      m.checks.insert(m.checks.end(), c.begin(), c.end());
    });
  }
  if (options.check_only) {
    mark_unmeasured(m, "not run (--check)");
    return m;
  }
  if (lost) {
    mark_unmeasured(m, "not measured (the CUDA context was lost)");
    return m;
  }

  size_t free_bytes = 0, total_bytes = 0;
  PODSIM_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  const double need = plan_device_bytes(plan);
  // Keep a margin for cuBLASLt, the CUDA context's own allocations and fragmentation.
  if (need > 0.92 * static_cast<double>(free_bytes)) {
    m.errors.push_back("the plan needs " + gigabytes(need) + " on the GPU for " +
                       std::to_string(plan.layers) + " layer(s); " +
                       gigabytes(static_cast<double>(free_bytes)) +
                       " are free: run fewer layers (--layers N)");
    mark_unmeasured(m, "not measured (does not fit in GPU memory)");
    return m;
  }

  lost = run_section("execute", options.device, m.errors, [&] {
    progress("allocating " + gigabytes(need) + " and planning the GEMMs");
    LayerExecutor ex(plan, stream.get(), lt.h);
    ex.init_random(1);
    int64_t step = 1;
    progress("one pass op by op with sampled checks");
    const std::vector<CheckOutcome> c = run_spot_checked_pass(ex, stream.get(), step++);
    m.checks.insert(m.checks.end(), c.begin(), c.end());
    progress(std::to_string(options.warmup_passes) + " warm-up and " +
             std::to_string(options.timed_passes) + " timed passes");
    timed_passes(ex, stream.get(), options, step, m);
  });
  if (!lost) {
    lost = run_section("collectives", options.device, m.errors,
                       [&] { collectives(plan, count, options, m); });
  }
  mark_unmeasured(m, lost ? "not measured (the CUDA context was lost)"
                          : "not measured (the run failed; see errors)");
  return m;
}

}  // namespace podsim::calibration::gpu
