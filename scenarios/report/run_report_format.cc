#include "scenarios/report/run_report_format.h"

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "scenarios/input/quantity.h"
#include "scenarios/report/svg.h"
#include "scenarios/report/sweep_labels.h"
#include "scenarios/report/text_table.h"

namespace podsim::scenarios {
namespace {

using nlohmann::json;
using sweep_labels::duration_text;
using sweep_labels::si_count;
using sweep_labels::tokens_text;

constexpr double kDay_s = 86400;

json spread_json(const Spread& s, double scale = 1) {
  return {{"mean", s.mean * scale},
          {"median", s.median * scale},
          {"p5", s.low * scale},
          {"p95", s.high * scale}};
}

/// "median M  (90%: L .. H)".
std::string spread_text(const Spread& s, std::string (*format)(double)) {
  return "median " + format(s.median) + "  (90%: " + format(s.low) + " .. " + format(s.high) + ")";
}

std::string ratio(double value) { return fixed_number(value, 3); }
std::string tokens_per_s(double value) { return si_count(value) + " tokens/s"; }
std::string gpu_hours(double value) { return si_count(value) + " GPU-h"; }
std::string events(double value) { return fixed_number(value, 0); }

const char* mode_name(SaveMode mode) { return mode == SaveMode::kSync ? "sync" : "async"; }

}  // namespace

json run_report_to_json(const RunReport& r) {
  const RunModel& m = r.model;
  const CheckpointCost& c = m.checkpoint;
  json failures = json::array();
  for (const FailureClass& f : m.failures) {
    failures.push_back(
        {{"class", f.name}, {"per", f.part}, {"parts", f.parts}, {"per_day", f.per_day}});
  }
  return {
      {"tokens", m.tokens},
      {"tokens_per_step", m.tokens_per_step},
      {"steps", m.inputs.steps},
      {"step_time_s", m.inputs.step_time_s},
      {"gpus", m.gpus},
      {"nodes", m.nodes},
      {"nics", m.nics},
      {"samples", r.samples},
      {"seed", r.seed},
      {"failure_free_s", r.failure_free_wall_s},
      {"expected_wall_s", r.expected_wall_s},
      {"wall_s", spread_json(r.wall_s)},
      {"gpu_hours", spread_json(r.gpu_hours)},
      {"ettr", spread_json(r.ettr)},
      {"goodput_tokens_per_s", spread_json(r.goodput_tokens_per_s)},
      {"interruptions", spread_json(r.interruptions)},
      {"interruptions_per_day", m.interruptions_per_day},
      {"failures", std::move(failures)},
      {"breakdown_s",
       {{"training", r.mean.useful_s},
        {"stragglers", r.mean.straggler_s},
        {"lost_work", r.mean.lost_s},
        {"checkpoint_stalls", r.mean.checkpoint_s},
        {"restarts", r.mean.restart_s}}},
      {"checkpoint",
       {{"bytes", c.bytes},
        {"bytes_per_gpu", c.bytes_per_gpu},
        {"mode", mode_name(m.save_mode)},
        {"write_bytes_per_s", c.write_bytes_per_s},
        {"read_bytes_per_s", c.read_bytes_per_s},
        {"stall_s", c.stall_s},
        {"persist_s", c.persist_s},
        {"load_s", c.load_s},
        {"interval_steps", c.interval_steps},
        {"interval_s", c.interval_s},
        {"interval_rule", c.interval_rule}}},
      {"restart_s", m.restart_s},
      {"stragglers",
       {{"step_factor", m.inputs.straggler_step_factor},
        {"present_fraction", m.straggler_present},
        {"episodes_per_day", m.inputs.straggler_rate_per_s * kDay_s},
        {"mean_duration_s", m.inputs.straggler_mean_s}}},
  };
}

std::string format_run_report_text(const RunReport& r) {
  const RunModel& m = r.model;
  const CheckpointCost& c = m.checkpoint;
  std::string out = "Run to train " + tokens_text(m.tokens) + " tokens (" +
                    std::to_string(r.samples) + " sampled runs, seed " + std::to_string(r.seed) +
                    ")\n";
  std::vector<std::vector<std::string>> head;
  head.push_back({"  steps", fixed_number(static_cast<double>(m.inputs.steps), 0) + " of " +
                                 si_count(m.tokens_per_step) + " tokens, " +
                                 format_seconds(m.inputs.step_time_s) + " each"});
  head.push_back({"  failure-free time", duration_text(r.failure_free_wall_s)});
  head.push_back({"  wall-clock time", spread_text(r.wall_s, duration_text)});
  head.push_back({"  expected (closed form)", duration_text(r.expected_wall_s)});
  head.push_back({"  GPU-hours", spread_text(r.gpu_hours, gpu_hours)});
  head.push_back({"  ETTR", spread_text(r.ettr, ratio)});
  head.push_back({"  goodput", spread_text(r.goodput_tokens_per_s, tokens_per_s)});
  const double mtti_h = m.interruptions_per_day > 0 ? 24 / m.interruptions_per_day : 0;
  head.push_back({"  interruptions", spread_text(r.interruptions, events) + ", " +
                                         fixed_number(m.interruptions_per_day, 2) +
                                         " per day, MTTI " + fixed_number(mtti_h, 2) + " h"});
  out += format_columns(head, "LL");

  const double wall = r.mean.wall_s > 0 ? r.mean.wall_s : 1;
  std::vector<std::vector<std::string>> parts;
  parts.push_back({"Where the run's time went (mean)", "time", "share"});
  const std::pair<const char*, double> terms[] = {{"  training", r.mean.useful_s},
                                                  {"  stragglers", r.mean.straggler_s},
                                                  {"  lost work (redone)", r.mean.lost_s},
                                                  {"  checkpoint stalls", r.mean.checkpoint_s},
                                                  {"  restarts", r.mean.restart_s}};
  for (const auto& [label, seconds] : terms) {
    parts.push_back({label, duration_text(seconds), format_percent(seconds / wall)});
  }
  out += '\n';
  out += format_columns(parts, "LRR");

  std::vector<std::vector<std::string>> failures;
  failures.push_back({"Interruptions by class", "parts", "per day"});
  for (const FailureClass& f : m.failures) {
    failures.push_back(
        {"  " + f.name, fixed_number(f.parts, 0) + " " + f.part + "s", fixed_number(f.per_day, 3)});
  }
  out += '\n';
  out += format_columns(failures, "LRR");

  out += "\nCheckpoint: " + format_bytes(c.bytes) + " (weights and optimizer states), " +
         format_bytes(c.bytes_per_gpu) + " on the fullest GPU; " + mode_name(m.save_mode) +
         " saves stall " + format_seconds(c.stall_s);
  if (c.persist_s > 0) out += ", written in " + format_seconds(c.persist_s);
  out += " at " + format_bandwidth(c.write_bytes_per_s) + "; every " +
         std::to_string(c.interval_steps) + " steps (" + format_seconds(c.interval_s) + ", " +
         c.interval_rule + "); a restart takes " + format_seconds(m.restart_s) +
         " with the load (" + format_seconds(c.load_s) + ")\n";
  out += "Stragglers: a step takes x" + fixed_number(m.inputs.straggler_step_factor, 3) +
         " with one slow GPU (simulated on the last stage), present " +
         format_percent(m.straggler_present) + " of the time\n";
  return out;
}

}  // namespace podsim::scenarios
