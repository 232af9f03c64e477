#include "calibration/execute_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "calibration/fit.h"

namespace podsim::calibration {
namespace {

bool is_pass_compute(OpClass c) {
  return c == OpClass::kGemm || c == OpClass::kAttention || c == OpClass::kMemoryBound;
}

std::string printf_string(const char* format, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, value);
  return buf;
}

std::string format_bytes(double bytes) {
  if (bytes >= 1e9) return printf_string("%.2f GB", bytes / 1e9);
  if (bytes >= 1e6) return printf_string("%.1f MB", bytes / 1e6);
  if (bytes >= 1e3) return printf_string("%.1f kB", bytes / 1e3);
  return printf_string("%.0f B", bytes);
}

std::string format_ms(double seconds) { return printf_string("%.3f ms", seconds * 1e3); }

std::string format_error(const std::optional<double>& error) {
  return error ? printf_string("%+.1f%%", *error * 100.0) : std::string("-");
}

std::string shape_text(const ExecOp& op) {
  switch (op.op_class) {
    case OpClass::kGemm: {
      std::string s = std::to_string(op.gemm.m) + "x" + std::to_string(op.gemm.n) + "x" +
                      std::to_string(op.gemm.k);
      if (op.gemm.batch != 1) s += " x" + std::to_string(op.gemm.batch);
      return s;
    }
    case OpClass::kAttention:
      return "b" + std::to_string(op.attention.batch) + " h" + std::to_string(op.attention.heads) +
             "/" + std::to_string(op.attention.kv_heads) + " s" +
             std::to_string(op.attention.q_len) + " d" + std::to_string(op.attention.head_dim);
    case OpClass::kMemoryBound:
    case OpClass::kOptimizer:
      return format_bytes(op.bytes);
    case OpClass::kCollective:
      return std::string(to_string(op.collective)) + " " + format_bytes(op.bytes) + " /" +
             std::to_string(op.group_size);
  }
  return "";
}

/// Left-aligned (or right-aligned) in a column of `width`. A text as wide
/// as its column or wider keeps a space on the side of its neighbour, so
/// "-" and "45898.993 ms" never print as "-45898.993 ms".
std::string cell(const std::string& text, size_t width, bool right = false) {
  if (text.size() >= width) return right ? " " + text : text + " ";
  const std::string pad(width - text.size(), ' ');
  return right ? pad + text : text + pad;
}

nlohmann::json optional_number(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace

std::optional<double> relative_error(double predicted, double measured) {
  if (!(measured > 0) || !std::isfinite(predicted)) return std::nullopt;
  return predicted / measured - 1.0;
}

std::optional<double> median_if_measured(const std::vector<double>& values) {
  if (values.empty()) return std::nullopt;
  return median(values);
}

bool ExecuteReport::all_checks_passed() const {
  if (!errors.empty()) return false;
  return std::all_of(checks.begin(), checks.end(), [](const CheckOutcome& c) { return c.passed; });
}

bool ExecuteReport::layer_within(double tolerance) const {
  if (!measured_layer_s) return false;
  const std::optional<double> e = relative_error(predicted_layer_s, *measured_layer_s);
  return e && std::abs(*e) <= tolerance;
}

ExecuteReport compare(const ExecPlan& plan, const ExecMeasurement* m) {
  if (m != nullptr && (m->layer_ops.size() != plan.layer_ops.size() ||
                       m->optimizer_ops.size() != plan.optimizer_ops.size())) {
    throw std::invalid_argument(
        "execute: the measurement has " + std::to_string(m->layer_ops.size()) + " + " +
        std::to_string(m->optimizer_ops.size()) + " ops, the plan " +
        std::to_string(plan.layer_ops.size()) + " + " + std::to_string(plan.optimizer_ops.size()));
  }
  ExecuteReport r;
  r.scenario = plan.scenario;
  r.predicted_gpu = plan.predicted_gpu;
  r.prediction_source = plan.prediction_source;
  r.layers = plan.layers;
  r.notes = plan.notes;
  const ExecLayerShape& s = plan.layer;
  r.layer = "b=" + std::to_string(s.batch) + " s=" + std::to_string(s.seq) +
            " tokens=" + std::to_string(s.tokens) + " hidden=" + std::to_string(s.hidden) +
            " heads=" + std::to_string(s.heads) + " kv_heads=" + std::to_string(s.kv_heads) +
            " head_dim=" + std::to_string(s.head_dim) + " ffn=" + std::to_string(s.ffn) +
            " (per rank, tp=" + std::to_string(s.tp) +
            (s.sequence_parallel ? ", sequence parallel" : "") + ")";
  if (m != nullptr) {
    r.measured = true;
    r.device = m->device_name;
    r.device_count = m->device_count;
    r.software = m->software;
    r.warmup_passes = m->warmup_passes;
    r.timed_passes = m->timed_passes;
    r.checks = m->checks;
    r.errors = m->errors;
  }
  for (size_t c = 0; c < r.classes.size(); ++c) r.classes[c].op_class = static_cast<OpClass>(c);

  bool all_compute_measured = true;
  double measured_compute = 0, overall_measured = 0, overall_predicted = 0;
  const auto add = [&](const ExecOp& op, const OpMeasurement* om, int64_t per_pass) {
    OpRow row;
    row.name = op.name;
    row.op_class = op.op_class;
    row.phase = op.phase;
    row.shape = shape_text(op);
    row.per_pass = per_pass;
    row.predicted_s = op.predicted_s;
    row.bound = op.predicted_bound;
    if (op.op_class == OpClass::kMemoryBound || op.op_class == OpClass::kOptimizer) {
      row.model_bytes = op.bytes;
      row.executor_bytes = executor_bytes(op.step, plan.layer, plan.optimizer_params);
    }
    if (om != nullptr) {
      row.measured_s = median_if_measured(om->times_s);
      row.status =
          row.measured_s ? "" : (om->not_measured.empty() ? "no samples" : om->not_measured);
    } else {
      row.status = "not run (dry run)";
    }
    if (row.measured_s) row.error = relative_error(row.predicted_s, *row.measured_s);
    const double pp = static_cast<double>(per_pass);
    ClassRow& c = r.classes[static_cast<size_t>(op.op_class)];
    ++c.ops;
    c.predicted_all_s += op.predicted_s * pp;
    if (row.measured_s) {
      ++c.measured_ops;
      c.measured_s += *row.measured_s * pp;
      c.predicted_s += op.predicted_s * pp;
      overall_measured += *row.measured_s * pp;
      overall_predicted += op.predicted_s * pp;
    }
    if (is_pass_compute(op.op_class)) {
      r.predicted_pass_s += op.predicted_s * pp;
      if (row.measured_s) {
        measured_compute += *row.measured_s * pp;
      } else {
        all_compute_measured = false;
      }
    }
    r.ops.push_back(std::move(row));
  };
  for (size_t i = 0; i < plan.layer_ops.size(); ++i) {
    const ExecOp& op = plan.layer_ops[i];
    add(op, m != nullptr ? &m->layer_ops[i] : nullptr, op.count * plan.layers);
  }
  for (size_t i = 0; i < plan.optimizer_ops.size(); ++i) {
    const ExecOp& op = plan.optimizer_ops[i];
    add(op, m != nullptr ? &m->optimizer_ops[i] : nullptr, op.count);
    r.predicted_optimizer_s += op.predicted_s * static_cast<double>(op.count);
  }
  for (ClassRow& c : r.classes) {
    if (c.measured_ops > 0) c.error = relative_error(c.predicted_s, c.measured_s);
  }
  r.predicted_layer_s = r.predicted_pass_s / static_cast<double>(std::max<int64_t>(1, plan.layers));
  if (m != nullptr) {
    if (all_compute_measured) r.measured_ops_s = measured_compute;
    r.measured_pass_s = median_if_measured(m->pass_s);
    if (r.measured_pass_s) {
      r.pass_error = relative_error(r.predicted_pass_s, *r.measured_pass_s);
      r.measured_layer_s =
          *r.measured_pass_s / static_cast<double>(std::max<int64_t>(1, plan.layers));
    }
    r.measured_optimizer_s = median_if_measured(m->optimizer_pass_s);
    if (overall_measured > 0) r.overall_error = relative_error(overall_predicted, overall_measured);
  }
  return r;
}

std::string format_execute_text(const ExecuteReport& r) {
  std::string out;
  const auto line = [&out](const std::string& s) { out += s + "\n"; };
  line("podsim execute: " + r.scenario);
  if (r.measured) {
    line("GPU: " + r.device + " (" + std::to_string(r.device_count) + " visible)" +
         (r.software.empty() ? "" : "; " + r.software));
  } else {
    line("GPU: none used (dry run: predictions only)");
  }
  line("predicted for: " + r.predicted_gpu + " (" + r.prediction_source + " efficiency curves)");
  line("layer: " + r.layer);
  std::string run = std::to_string(r.layers) + " layer(s) per pass";
  if (r.measured) {
    run += ", " + std::to_string(r.warmup_passes) + " warm-up + " + std::to_string(r.timed_passes) +
           " timed passes; measured = median per instance";
  }
  line("run: " + run);
  line("");

  size_t name_width = 4;
  for (const OpRow& row : r.ops) name_width = std::max(name_width, row.name.size());
  name_width += 2;
  line(cell("op", name_width) + cell("phase", 11) + cell("class", 14) + cell("n/pass", 7, true) +
       "  " + cell("shape", 28) + cell("measured", 12, true) + cell("predicted", 12, true) +
       cell("error", 9, true) + "  bound / status");
  for (const OpRow& row : r.ops) {
    std::string tail = row.bound;
    if (!row.status.empty()) tail += (tail.empty() ? "" : "; ") + row.status;
    line(cell(row.name, name_width) + cell(std::string(to_string(row.phase)), 11) +
         cell(std::string(to_string(row.op_class)), 14) +
         cell(std::to_string(row.per_pass), 7, true) + "  " + cell(row.shape, 28) +
         cell(row.measured_s ? format_ms(*row.measured_s) : "-", 12, true) +
         cell(format_ms(row.predicted_s), 12, true) + cell(format_error(row.error), 9, true) +
         "  " + tail);
  }
  line("");
  line("per pass (n/pass x time), by class:");
  line(cell("class", 14) + cell("measured ops", 13, true) + cell("measured", 13, true) +
       cell("predicted", 13, true) + cell("error", 9, true) + cell("predicted, all ops", 20, true));
  for (const ClassRow& c : r.classes) {
    if (c.ops == 0) continue;
    line(cell(std::string(to_string(c.op_class)), 14) +
         cell(std::to_string(c.measured_ops) + "/" + std::to_string(c.ops), 13, true) +
         cell(c.measured_ops > 0 ? format_ms(c.measured_s) : "-", 13, true) +
         cell(c.measured_ops > 0 ? format_ms(c.predicted_s) : "-", 13, true) +
         cell(format_error(c.error), 9, true) + cell(format_ms(c.predicted_all_s), 20, true));
  }
  line("");
  std::string pass =
      "stack compute (forward+recompute+backward, collectives excluded): predicted " +
      format_ms(r.predicted_pass_s);
  if (r.measured_pass_s) {
    pass += ", measured " + format_ms(*r.measured_pass_s) + " (events around the pass";
    if (r.measured_ops_s) pass += "; sum of op medians " + format_ms(*r.measured_ops_s);
    pass += "), error " + format_error(r.pass_error);
  }
  line(pass);
  std::string layer = "per layer: predicted " + format_ms(r.predicted_layer_s);
  if (r.measured_layer_s) {
    layer += ", measured " + format_ms(*r.measured_layer_s) + ", error " +
             format_error(relative_error(r.predicted_layer_s, *r.measured_layer_s)) +
             " (within 10%: " + (r.layer_within(0.10) ? "yes" : "no") + ")";
  }
  line(layer);
  std::string opt = "optimizer: predicted " + format_ms(r.predicted_optimizer_s);
  if (r.measured_optimizer_s) {
    opt += ", measured " + format_ms(*r.measured_optimizer_s) + ", error " +
           format_error(relative_error(r.predicted_optimizer_s, *r.measured_optimizer_s));
  }
  line(opt);
  if (r.overall_error)
    line("overall (every measured op, sum of medians): error " + format_error(r.overall_error));
  if (!r.checks.empty()) {
    line("");
    line("checks:");
    for (const CheckOutcome& c : r.checks) {
      line(std::string("  ") + (c.passed ? "passed  " : "FAILED  ") + c.name +
           (c.detail.empty() ? "" : ": " + c.detail));
    }
  }
  if (!r.errors.empty()) {
    line("");
    line("errors:");
    for (const std::string& e : r.errors) line("  " + e);
  }
  if (!r.notes.empty()) {
    line("");
    line("notes:");
    for (const std::string& n : r.notes) line("  - " + n);
  }
  return out;
}

std::string execute_report_json(const ExecuteReport& r) {
  using nlohmann::json;
  json ops = json::array();
  for (const OpRow& row : r.ops) {
    ops.push_back({{"name", row.name},
                   {"class", std::string(to_string(row.op_class))},
                   {"phase", std::string(to_string(row.phase))},
                   {"shape", row.shape},
                   {"per_pass", row.per_pass},
                   {"measured_s", optional_number(row.measured_s)},
                   {"predicted_s", row.predicted_s},
                   {"error", optional_number(row.error)},
                   {"bound", row.bound},
                   {"status", row.status},
                   {"model_bytes", row.model_bytes},
                   {"executor_bytes", row.executor_bytes}});
  }
  json classes = json::object();
  for (const ClassRow& c : r.classes) {
    if (c.ops == 0) continue;
    classes[std::string(to_string(c.op_class))] = {
        {"ops", c.ops},
        {"measured_ops", c.measured_ops},
        {"measured_s", c.measured_ops > 0 ? json(c.measured_s) : json(nullptr)},
        {"predicted_s", c.measured_ops > 0 ? json(c.predicted_s) : json(nullptr)},
        {"predicted_all_s", c.predicted_all_s},
        {"error", optional_number(c.error)}};
  }
  json checks = json::array();
  for (const CheckOutcome& c : r.checks) {
    checks.push_back({{"name", c.name}, {"passed", c.passed}, {"detail", c.detail}});
  }
  const std::optional<double> layer_error =
      r.measured_layer_s ? relative_error(r.predicted_layer_s, *r.measured_layer_s) : std::nullopt;
  json out = {
      {"scenario", r.scenario},
      {"device", r.device},
      {"device_count", r.device_count},
      {"software", r.software},
      {"predicted_gpu", r.predicted_gpu},
      {"prediction_source", r.prediction_source},
      {"layer", r.layer},
      {"layers", r.layers},
      {"warmup_passes", r.warmup_passes},
      {"timed_passes", r.timed_passes},
      {"measured", r.measured},
      {"ops", ops},
      {"classes", classes},
      {"pass",
       {{"predicted_s", r.predicted_pass_s},
        {"measured_s", optional_number(r.measured_pass_s)},
        {"measured_ops_s", optional_number(r.measured_ops_s)},
        {"error", optional_number(r.pass_error)}}},
      {"layer_fwd_bwd",
       {{"predicted_s", r.predicted_layer_s},
        {"measured_s", optional_number(r.measured_layer_s)},
        {"error", optional_number(layer_error)},
        {"within_10_percent", r.measured_layer_s ? json(r.layer_within(0.10)) : json(nullptr)}}},
      {"optimizer",
       {{"predicted_s", r.predicted_optimizer_s},
        {"measured_s", optional_number(r.measured_optimizer_s)},
        {"error", r.measured_optimizer_s ? optional_number(relative_error(r.predicted_optimizer_s,
                                                                          *r.measured_optimizer_s))
                                         : json(nullptr)}}},
      {"overall_error", optional_number(r.overall_error)},
      {"checks", checks},
      {"checks_passed", r.all_checks_passed()},
      {"errors", r.errors},
      {"notes", r.notes},
  };
  return out.dump(2) + "\n";
}

}  // namespace podsim::calibration
