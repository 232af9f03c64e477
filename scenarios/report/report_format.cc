#include "scenarios/report/report_format.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "scenarios/input/quantity.h"
#include "scenarios/report/text_table.h"
#include "sim/format_fixed.h"

namespace podsim::scenarios {

using nlohmann::json;

namespace {

std::string hex64(uint64_t value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%016" PRIx64, value);
  return buffer;
}

/// Reads report fields from JSON, collecting every problem.
class ReportReader {
 public:
  explicit ReportReader(std::vector<Problem>& problems) : problems_(problems) {}

  const json* at(const json& object, const std::string& key, const std::string& path) {
    if (!object.is_object() || !object.contains(key)) {
      problems_.push_back({path, "missing", ""});
      return nullptr;
    }
    return &object[key];
  }
  double number(const json& object, const std::string& key, const std::string& path) {
    const json* value = at(object, key, path + "/" + key);
    if (value == nullptr) return 0;
    if (value->is_null()) return std::nan("");  // a non-finite number was written as null
    if (!value->is_number()) {
      problems_.push_back({path + "/" + key, "expected a number", ""});
      return 0;
    }
    return value->get<double>();
  }
  int64_t integer(const json& object, const std::string& key, const std::string& path) {
    const json* value = at(object, key, path + "/" + key);
    if (value == nullptr) return 0;
    if (!value->is_number_integer()) {
      problems_.push_back({path + "/" + key, "expected an integer", ""});
      return 0;
    }
    return value->get<int64_t>();
  }
  std::string text(const json& object, const std::string& key, const std::string& path) {
    const json* value = at(object, key, path + "/" + key);
    if (value == nullptr) return "";
    if (!value->is_string()) {
      problems_.push_back({path + "/" + key, "expected a string", ""});
      return "";
    }
    return value->get<std::string>();
  }
  bool flag(const json& object, const std::string& key, const std::string& path) {
    const json* value = at(object, key, path + "/" + key);
    if (value == nullptr) return false;
    if (!value->is_boolean()) {
      problems_.push_back({path + "/" + key, "expected true or false", ""});
      return false;
    }
    return value->get<bool>();
  }

 private:
  std::vector<Problem>& problems_;
};

}  // namespace

json report_to_json(const Report& r) {
  json out;
  out["scenario"] = r.scenario;
  out["step_time_s"] = r.step_time_s;
  out["tokens_per_s"] = r.tokens_per_s;
  out["tokens_per_s_per_gpu"] = r.tokens_per_s_per_gpu;
  out["model_tflops_per_gpu"] = r.model_tflops_per_gpu;
  out["hardware_tflops_per_gpu"] = r.hardware_tflops_per_gpu;
  out["mfu"] = r.mfu;
  out["hfu"] = r.hfu;
  out["flops_convention"] = r.flops_convention;
  out["model_flops_per_step"] = r.model_flops_per_step;
  out["hardware_flops_per_step"] = r.hardware_flops_per_step;
  out["bubble_fraction"] = r.bubble_fraction;
  const Breakdown& b = r.breakdown;
  out["breakdown_s"] = {{"compute", b.compute},
                        {"recompute", b.recompute},
                        {"exposed_comm",
                         {{"tp", b.exposed_comm.tp},
                          {"cp", b.exposed_comm.cp},
                          {"pp", b.exposed_comm.pp},
                          {"dp", b.exposed_comm.dp},
                          {"ep", b.exposed_comm.ep}}},
                        {"bubble", b.bubble},
                        {"optimizer", b.optimizer},
                        {"compute_split",
                         {{"gemm", b.compute_split.gemm},
                          {"attention", b.compute_split.attention},
                          {"memory_bound", b.compute_split.memory_bound},
                          {"host_idle", b.compute_split.host_idle},
                          {"host_copy_wait", b.compute_split.host_copy_wait},
                          {"optimizer", b.compute_split.optimizer},
                          {"comm_contention", b.compute_split.comm_contention}}}};
  if (b.moe.total() > 0) {
    // Inside compute, recompute and exposed ep above (not additive).
    out["breakdown_s"]["moe"] = {{"router", b.moe.router},
                                 {"permute", b.moe.permute},
                                 {"dispatch_combine", b.moe.dispatch_combine},
                                 {"grouped_gemm", b.moe.grouped_gemm},
                                 {"shared_experts", b.moe.shared_experts},
                                 {"imbalance", b.moe.imbalance}};
  }
  json stages = json::array();
  for (const StageMemory& s : r.per_stage) {
    stages.push_back({{"stage", s.stage},
                      {"weights", s.weights},
                      {"grads", s.grads},
                      {"optimizer", s.optimizer},
                      {"activations", s.activations},
                      {"temporaries", s.temporaries},
                      {"allocated", s.allocated},
                      {"reserved", s.reserved},
                      {"outside_allocator", s.outside_allocator},
                      {"device", s.device},
                      {"peak", s.peak}});
  }
  out["memory"] = {{"capacity_bytes", r.memory_capacity_bytes},
                   {"peak_bytes", r.memory_peak_bytes},
                   {"counter", r.memory_counter},
                   {"device_peak_bytes", r.memory_device_peak_bytes},
                   {"fits", r.memory_fits},
                   {"per_stage", std::move(stages)}};
  out["gpus"] = r.gpus;
  out["critical_stage"] = r.critical_stage;
  out["simulation_mode"] = r.simulation_mode;
  out["simulated_ranks"] = r.simulated_ranks;
  out["engine_events"] = r.engine_events;
  out["fingerprint"] = hex64(r.fingerprint);
  out["hardware_source"] = r.hardware_source;
  out["warnings"] = r.warnings;
  return out;
}

Result<Report> report_from_json(const json& in) {
  std::vector<Problem> problems;
  if (!in.is_object()) return std::vector<Problem>{{"", "expected a report object", ""}};
  ReportReader read(problems);
  Report r;
  r.scenario = read.text(in, "scenario", "");
  r.step_time_s = read.number(in, "step_time_s", "");
  r.tokens_per_s = read.number(in, "tokens_per_s", "");
  r.tokens_per_s_per_gpu = read.number(in, "tokens_per_s_per_gpu", "");
  r.model_tflops_per_gpu = read.number(in, "model_tflops_per_gpu", "");
  r.hardware_tflops_per_gpu = read.number(in, "hardware_tflops_per_gpu", "");
  r.mfu = read.number(in, "mfu", "");
  r.hfu = read.number(in, "hfu", "");
  r.flops_convention = read.text(in, "flops_convention", "");
  r.model_flops_per_step = read.number(in, "model_flops_per_step", "");
  r.hardware_flops_per_step = read.number(in, "hardware_flops_per_step", "");
  r.bubble_fraction = read.number(in, "bubble_fraction", "");
  if (const json* b = read.at(in, "breakdown_s", "/breakdown_s")) {
    r.breakdown.compute = read.number(*b, "compute", "/breakdown_s");
    r.breakdown.recompute = read.number(*b, "recompute", "/breakdown_s");
    r.breakdown.bubble = read.number(*b, "bubble", "/breakdown_s");
    r.breakdown.optimizer = read.number(*b, "optimizer", "/breakdown_s");
    if (const json* c = read.at(*b, "exposed_comm", "/breakdown_s/exposed_comm")) {
      const std::string path = "/breakdown_s/exposed_comm";
      r.breakdown.exposed_comm.tp = read.number(*c, "tp", path);
      r.breakdown.exposed_comm.cp = read.number(*c, "cp", path);
      r.breakdown.exposed_comm.pp = read.number(*c, "pp", path);
      r.breakdown.exposed_comm.dp = read.number(*c, "dp", path);
      r.breakdown.exposed_comm.ep = read.number(*c, "ep", path);
    }
    // An extension key: reports written before it have none.
    if (b->contains("compute_split")) {
      const json& c = (*b)["compute_split"];
      const std::string path = "/breakdown_s/compute_split";
      ComputeSplit& split = r.breakdown.compute_split;
      split.gemm = read.number(c, "gemm", path);
      split.attention = read.number(c, "attention", path);
      split.memory_bound = read.number(c, "memory_bound", path);
      split.host_idle = read.number(c, "host_idle", path);
      // Added later than the other parts: older reports have none.
      if (c.contains("host_copy_wait")) {
        split.host_copy_wait = read.number(c, "host_copy_wait", path);
      }
      split.optimizer = read.number(c, "optimizer", path);
      split.comm_contention = read.number(c, "comm_contention", path);
    }
    if (b->contains("moe")) {
      const json& m = (*b)["moe"];
      const std::string path = "/breakdown_s/moe";
      r.breakdown.moe.router = read.number(m, "router", path);
      r.breakdown.moe.permute = read.number(m, "permute", path);
      r.breakdown.moe.dispatch_combine = read.number(m, "dispatch_combine", path);
      r.breakdown.moe.grouped_gemm = read.number(m, "grouped_gemm", path);
      r.breakdown.moe.shared_experts = read.number(m, "shared_experts", path);
      r.breakdown.moe.imbalance = read.number(m, "imbalance", path);
    }
  }
  if (const json* m = read.at(in, "memory", "/memory")) {
    r.memory_capacity_bytes = read.number(*m, "capacity_bytes", "/memory");
    r.memory_peak_bytes = read.number(*m, "peak_bytes", "/memory");
    r.memory_counter = read.text(*m, "counter", "/memory");
    r.memory_device_peak_bytes = read.number(*m, "device_peak_bytes", "/memory");
    r.memory_fits = read.flag(*m, "fits", "/memory");
    if (const json* stages = read.at(*m, "per_stage", "/memory/per_stage")) {
      if (!stages->is_array()) {
        problems.push_back({"/memory/per_stage", "expected an array", ""});
      } else {
        for (size_t i = 0; i < stages->size(); ++i) {
          const std::string path = "/memory/per_stage/" + std::to_string(i);
          const json& s = (*stages)[i];
          StageMemory stage;
          stage.stage = read.integer(s, "stage", path);
          stage.weights = read.number(s, "weights", path);
          stage.grads = read.number(s, "grads", path);
          stage.optimizer = read.number(s, "optimizer", path);
          stage.activations = read.number(s, "activations", path);
          stage.temporaries = read.number(s, "temporaries", path);
          stage.allocated = read.number(s, "allocated", path);
          stage.reserved = read.number(s, "reserved", path);
          stage.outside_allocator = read.number(s, "outside_allocator", path);
          stage.device = read.number(s, "device", path);
          stage.peak = read.number(s, "peak", path);
          r.per_stage.push_back(stage);
        }
      }
    }
  }
  r.gpus = read.integer(in, "gpus", "");
  r.critical_stage = read.integer(in, "critical_stage", "");
  r.simulation_mode = read.text(in, "simulation_mode", "");
  r.simulated_ranks = read.integer(in, "simulated_ranks", "");
  if (const json* events = read.at(in, "engine_events", "/engine_events")) {
    if (events->is_number_unsigned() || (events->is_number_integer() && *events >= 0)) {
      r.engine_events = events->get<uint64_t>();
    } else {
      problems.push_back({"/engine_events", "expected a non-negative integer", ""});
    }
  }
  const std::string fingerprint = read.text(in, "fingerprint", "");
  if (!fingerprint.empty()) {
    if (fingerprint.size() != 16 ||
        fingerprint.find_first_not_of("0123456789abcdef") != std::string::npos) {
      problems.push_back({"/fingerprint", "expected 16 lower-case hex digits", ""});
    } else {
      r.fingerprint = std::stoull(fingerprint, nullptr, 16);
    }
  }
  r.hardware_source = read.text(in, "hardware_source", "");
  if (const json* warnings = read.at(in, "warnings", "/warnings")) {
    if (!warnings->is_array()) {
      problems.push_back({"/warnings", "expected an array of strings", ""});
    } else {
      for (const json& w : *warnings) {
        if (w.is_string()) {
          r.warnings.push_back(w.get<std::string>());
        } else {
          problems.push_back({"/warnings", "expected an array of strings", ""});
          break;
        }
      }
    }
  }
  if (!problems.empty()) return problems;
  return r;
}

std::string report_json_text(const Report& report) { return report_to_json(report).dump(2) + "\n"; }

std::string format_report_text(const Report& r) {
  std::string out;
  std::vector<std::vector<std::string>> head;
  head.push_back({"Scenario", r.scenario});
  head.push_back({"GPUs", std::to_string(r.gpus) + " (" + r.simulation_mode + " simulation, " +
                              std::to_string(r.simulated_ranks) + " ranks simulated, " +
                              std::to_string(r.engine_events) + " events)"});
  head.push_back({"Hardware model", r.hardware_source});
  head.push_back({"Step time", format_seconds(r.step_time_s)});
  head.push_back({"Throughput", format_fixed(r.tokens_per_s, 0) + " tokens/s (" +
                                    format_fixed(r.tokens_per_s_per_gpu, 1) + " per GPU)"});
  head.push_back({"Model FLOP/s per GPU", format_flops_rate(r.model_tflops_per_gpu * 1e12) +
                                              "  MFU " + format_percent(r.mfu)});
  head.push_back({"Hardware FLOP/s per GPU", format_flops_rate(r.hardware_tflops_per_gpu * 1e12) +
                                                 "  HFU " + format_percent(r.hfu)});
  head.push_back({"FLOPs counted as", r.flops_convention});
  head.push_back({"Bubble fraction", format_percent(r.bubble_fraction)});
  out += format_columns(head, "LL");

  const Breakdown& b = r.breakdown;
  const double step = r.step_time_s > 0 ? r.step_time_s : 1.0;
  std::vector<std::vector<std::string>> parts;
  parts.push_back({"Where the step went (critical stage " + std::to_string(r.critical_stage) + ")",
                   "time", "share"});
  const std::pair<const char*, double> terms[] = {{"  compute", b.compute},
                                                  {"  recompute", b.recompute},
                                                  {"  exposed TP comm", b.exposed_comm.tp},
                                                  {"  exposed CP comm", b.exposed_comm.cp},
                                                  {"  exposed PP comm", b.exposed_comm.pp},
                                                  {"  exposed DP comm", b.exposed_comm.dp},
                                                  {"  exposed EP comm", b.exposed_comm.ep},
                                                  {"  pipeline bubble", b.bubble},
                                                  {"  optimizer", b.optimizer}};
  for (const auto& [label, seconds] : terms) {
    parts.push_back({label, format_seconds(seconds), format_percent(seconds / step)});
  }
  const ComputeSplit& cs = b.compute_split;
  parts.push_back({"  compute + recompute + optimizer were:", "", ""});
  const std::pair<const char*, double> split[] = {
      {"    GEMMs", cs.gemm},
      {"    attention", cs.attention},
      {"    memory-bound kernels", cs.memory_bound},
      {"    waiting for the host", cs.host_idle},
      {"    optimizer kernels", cs.optimizer},
      {"    lost to SMs running collectives", cs.comm_contention}};
  for (const auto& [label, seconds] : split) {
    parts.push_back({label, format_seconds(seconds), format_percent(seconds / step)});
  }
  // Only plans that offload activations to host memory have any.
  if (cs.host_copy_wait > 0) {
    parts.push_back({"    waiting for host-memory copies", format_seconds(cs.host_copy_wait),
                     format_percent(cs.host_copy_wait / step)});
  }
  if (b.moe.total() > 0) {
    parts.push_back({"  of which MoE layers (in compute and EP comm)", "", ""});
    const std::pair<const char*, double> moe[] = {
        {"    router", b.moe.router},
        {"    permute / unpermute", b.moe.permute},
        {"    dispatch / combine (exposed)", b.moe.dispatch_combine},
        {"    grouped GEMMs (routed experts)", b.moe.grouped_gemm},
        {"    shared experts", b.moe.shared_experts},
        {"    load imbalance (busiest rank, in the above)", b.moe.imbalance}};
    for (const auto& [label, seconds] : moe) {
      parts.push_back({label, format_seconds(seconds), format_percent(seconds / step)});
    }
  }
  out += '\n';
  out += format_columns(parts, "LRR");

  out += "\nMemory per GPU: " + format_bytes(r.memory_peak_bytes) + " " + r.memory_counter +
         " by the allocator at its peak; with what lives outside it " +
         format_bytes(r.memory_device_peak_bytes) + " of " + format_bytes(r.memory_capacity_bytes) +
         (r.memory_fits ? " (fits)" : " (DOES NOT FIT)") + "\n";
  if (!r.per_stage.empty()) {
    // Live by kind when allocated memory peaks, the allocator's cached free
    // blocks and rounding on top (to its reserved peak), then the CUDA
    // context and NCCL buffers outside it.
    std::vector<std::vector<std::string>> stages;
    stages.push_back({"  stage", "weights", "grads", "optimizer", "activations", "temporaries",
                      "cached", "outside", "device"});
    for (const StageMemory& s : r.per_stage) {
      const double live = s.weights + s.grads + s.optimizer + s.activations + s.temporaries;
      stages.push_back({"  " + std::to_string(s.stage), format_bytes(s.weights),
                        format_bytes(s.grads), format_bytes(s.optimizer),
                        format_bytes(s.activations), format_bytes(s.temporaries),
                        format_bytes(s.reserved - live), format_bytes(s.outside_allocator),
                        format_bytes(s.device)});
    }
    out += format_columns(stages, "RRRRRRRRR");
  }
  if (!r.warnings.empty()) {
    out += "\nWarnings\n";
    for (const std::string& w : r.warnings) out += "  - " + w + "\n";
  }
  return out;
}

}  // namespace podsim::scenarios
