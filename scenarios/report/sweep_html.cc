// report.html: the sweep for people, with inline SVG charts.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "scenarios/input/quantity.h"
#include "scenarios/report/svg.h"
#include "scenarios/report/sweep_labels.h"
#include "scenarios/report/sweep_report.h"

namespace podsim::scenarios {

using sweep_labels::baseline_rank_text;
using sweep_labels::context_name;
using sweep_labels::cost_text;
using sweep_labels::counts_text;
using sweep_labels::dollars;
using sweep_labels::duration_text;
using sweep_labels::ettr;
using sweep_labels::fixed;
using sweep_labels::front_flags;
using sweep_labels::g9;
using sweep_labels::kGiB;
using sweep_labels::order_text;
using sweep_labels::recompute_name;
using sweep_labels::schedule_name;
using sweep_labels::si_count;
using sweep_labels::target_notes;
using sweep_labels::target_text;
using sweep_labels::tokens_text;

namespace {

struct Series {
  std::string name;
  std::string color;
  std::vector<std::pair<double, double>> points;
  bool line = true;
  double radius = 3;
};

constexpr const char* kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                    "#9467bd", "#8c564b", "#e377c2", "#17becf"};

/// A small inline chart; `log2_x` places x on a log2 scale (GPU counts).
std::string chart(const std::string& title, const std::string& x_label, const std::string& y_label,
                  const std::vector<Series>& series, bool log2_x) {
  constexpr double kW = 560, kH = 320, kL = 70, kR = 20, kT = 30, kB = 70;
  const double pw = kW - kL - kR, ph = kH - kT - kB;
  double xmin = 1e300, xmax = -1e300, ymax = 0;
  for (const Series& s : series) {
    for (const auto& [x, y] : s.points) {
      const double xv = log2_x ? std::log2(x) : x;
      xmin = std::min(xmin, xv);
      xmax = std::max(xmax, xv);
      ymax = std::max(ymax, y);
    }
  }
  Svg svg(kW, kH, false);
  svg.text(kL, 18, title, "start", 13, "font-weight=\"bold\"");
  if (xmin > xmax) {
    svg.text(kW / 2, kH / 2, "no data", "middle", 12);
    return svg.finish();
  }
  if (xmax - xmin < 1e-12) {
    xmin -= 1;
    xmax += 1;
  }
  const double pad = (xmax - xmin) * 0.05;
  xmin -= pad;
  xmax += pad;
  ymax = ymax > 0 ? ymax * 1.1 : 1;
  auto X = [&](double x) { return kL + ((log2_x ? std::log2(x) : x) - xmin) / (xmax - xmin) * pw; };
  auto Y = [&](double y) { return kT + ph - y / ymax * ph; };
  svg.line(kL, kT + ph, kL + pw, kT + ph, "#333333");
  svg.line(kL, kT, kL, kT + ph, "#333333");
  const std::vector<double> y_ticks = nice_ticks(0, ymax, 5);
  const int y_decimals = y_ticks.size() > 1 ? tick_decimals(y_ticks[1] - y_ticks[0]) : 0;
  for (double t : y_ticks) {
    svg.line(kL, Y(t), kL + pw, Y(t), "#eeeeee", 0.5);
    svg.text(kL - 5, Y(t) + 3, t >= 1e4 ? si_count(t) : fixed(t, y_decimals), "end", 10);
  }
  if (log2_x) {
    std::vector<double> xs;
    for (const Series& s : series) {
      for (const auto& p : s.points) xs.push_back(p.first);
    }
    std::sort(xs.begin(), xs.end());
    xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
    for (double x : xs) {
      svg.line(X(x), kT + ph, X(x), kT + ph + 4, "#333333");
      svg.text(X(x), kT + ph + 16, fixed(x, 0), "middle", 10);
    }
  } else {
    const std::vector<double> x_ticks = nice_ticks(std::max(0.0, xmin), xmax, 6);
    const int x_decimals = x_ticks.size() > 1 ? tick_decimals(x_ticks[1] - x_ticks[0]) : 1;
    for (double t : x_ticks) {
      const double x = kL + (t - xmin) / (xmax - xmin) * pw;
      svg.line(x, kT + ph, x, kT + ph + 4, "#333333");
      svg.text(x, kT + ph + 16, fixed(t, x_decimals), "middle", 10);
    }
  }
  svg.text(kL + pw / 2, kT + ph + 32, x_label, "middle", 11);
  svg.text(14, kT + ph / 2, y_label, "middle", 11,
           "transform=\"rotate(-90 14 " + fixed(kT + ph / 2, 2) + ")\"");
  double lx = kL;
  for (const Series& s : series) {
    std::vector<std::pair<double, double>> px;
    for (const auto& [x, y] : s.points) px.emplace_back(X(x), Y(y));
    if (s.line && px.size() > 1) svg.polyline(px, s.color, 1.5);
    for (const auto& [x, y] : px) svg.circle(x, y, s.radius, s.color);
    if (!s.name.empty()) {
      svg.circle(lx + 5, kH - 12, 4, s.color);
      svg.text(lx + 12, kH - 8, s.name, "start", 10);
      lx += 24 + 6.0 * static_cast<double>(s.name.size());
    }
  }
  return svg.finish();
}

/// Where the time to train of each of the top plans goes (their sampled
/// runs): a stacked bar per plan and the numbers beside it.
std::string run_breakdown_html(const SweepOutcome& o) {
  struct Part {
    const char* name;
    const char* color;
    double RunSample::*seconds;
  };
  const Part parts[] = {{"training", "#2ca02c", &RunSample::useful_s},
                        {"stragglers", "#9467bd", &RunSample::straggler_s},
                        {"lost work", "#d62728", &RunSample::lost_s},
                        {"checkpoint stalls", "#ff7f0e", &RunSample::checkpoint_s},
                        {"restarts", "#8c564b", &RunSample::restart_s}};
  std::vector<size_t> shown;
  double longest = 0;
  for (size_t k = 0; k < o.ranked.size(); ++k) {
    if (!o.ranked[k].run) continue;
    shown.push_back(k);
    longest = std::max(longest, o.ranked[k].run->mean.wall_s);
  }
  if (shown.empty() || longest <= 0) return "";
  const RunReport& first = *o.ranked[shown.front()].run;
  std::string h = "<h2>Where the time to train goes</h2>\n<p>Mean of " +
                  std::to_string(first.samples) + " sampled runs per plan (seed " +
                  std::to_string(first.seed) +
                  "): interruptions from the cluster's failure rates, checkpoint saves, restarts "
                  "(docs/goodput.md). Stragglers are left out of the sweep.</p>\n";
  constexpr double kW = 760, kRow = 22, kLabel = 60, kTop = 28;
  const double width = kW - kLabel - 20;
  Svg svg(kW, kTop + kRow * static_cast<double>(shown.size()) + 10, false);
  double lx = kLabel;
  for (const Part& part : parts) {
    svg.rect(lx, 6, 10, 10, part.color);
    svg.text(lx + 14, 15, part.name, "start", 10);
    lx += 24 + 6.5 * static_cast<double>(std::string(part.name).size());
  }
  for (size_t row = 0; row < shown.size(); ++row) {
    const RunSample& mean = o.ranked[shown[row]].run->mean;
    const double y = kTop + kRow * static_cast<double>(row);
    svg.text(kLabel - 6, y + 13, "rank " + std::to_string(shown[row] + 1), "end", 10);
    double x = kLabel;
    for (const Part& part : parts) {
      const double w = mean.*part.seconds / longest * width;
      svg.rect(x, y + 2, w, kRow - 6, part.color);
      x += w;
    }
  }
  h += "<div class=\"charts\">\n" + svg.finish() + "</div>\n";
  h += "<table>\n<tr><th>rank</th><th>time to train: median</th><th>90% range</th>"
       "<th>ETTR median</th><th>interruptions</th>";
  for (const Part& part : parts) h += std::string("<th>") + part.name + "</th>";
  h += "</tr>\n";
  for (size_t k : shown) {
    const RunReport& run = *o.ranked[k].run;
    h += "<tr><td>" + std::to_string(k + 1) + "</td><td>" +
         xml_escape(duration_text(run.wall_s.median)) + "</td><td>" +
         xml_escape(duration_text(run.wall_s.low)) + " .. " +
         xml_escape(duration_text(run.wall_s.high)) + "</td><td>" + fixed(run.ettr.median, 3) +
         "</td><td>" + fixed(run.interruptions.median, 0) + "</td>";
    for (const Part& part : parts) {
      h += "<td>" + xml_escape(format_percent(run.mean.*part.seconds / run.mean.wall_s)) + "</td>";
    }
    h += "</tr>\n";
  }
  return h + "</table>\n";
}

}  // namespace

std::string sweep_html(const ScenarioSpec& scenario, const SweepOutcome& o,
                       const std::vector<std::string>& space) {
  const std::vector<bool> front = front_flags(o);
  // Best plan of each target (ranked is sorted, so the first seen is best).
  std::map<uint32_t, size_t> best;
  for (size_t k = 0; k < o.ranked.size(); ++k) {
    best.emplace(o.candidates[o.ranked[k].index].target, k);
  }
  std::vector<std::string> gpu_types;
  for (const SweepTarget& t : o.targets) {
    if (std::find(gpu_types.begin(), gpu_types.end(), t.gpu) == gpu_types.end()) {
      gpu_types.push_back(t.gpu);
    }
  }
  const size_t palette = sizeof kPalette / sizeof kPalette[0];
  std::vector<Series> time_series, cost_series, pareto_series;
  for (size_t g = 0; g < gpu_types.size(); ++g) {
    Series ts{gpu_types[g], kPalette[g % palette], {}, true, 3.5};
    Series cs = ts;
    Series ps{gpu_types[g], kPalette[g % palette], {}, false, 1.8};
    for (const auto& [target, k] : best) {
      const SweepTarget& t = o.targets[target];
      if (t.gpu != gpu_types[g]) continue;
      const RankedPlan& r = o.ranked[k];
      ts.points.emplace_back(static_cast<double>(t.gpus), r.outcome.step_time_s);
      cs.points.emplace_back(static_cast<double>(t.gpus),
                             o.cost_in_dollars ? *r.cost_usd : r.gpu_hours);
    }
    std::sort(ts.points.begin(), ts.points.end());
    std::sort(cs.points.begin(), cs.points.end());
    for (size_t k = 0; k < o.ranked.size() && k < 5000; ++k) {
      const RankedPlan& r = o.ranked[k];
      if (o.targets[o.candidates[r.index].target].gpu != gpu_types[g]) continue;
      ps.points.emplace_back(r.train_time_s / 86400.0,
                             o.cost_in_dollars ? *r.cost_usd : r.gpu_hours);
    }
    time_series.push_back(std::move(ts));
    cost_series.push_back(std::move(cs));
    pareto_series.push_back(std::move(ps));
  }
  Series front_series{"Pareto front", "#000000", {}, true, 3};
  for (size_t k : o.pareto) {
    const RankedPlan& r = o.ranked[k];
    front_series.points.emplace_back(r.train_time_s / 86400.0,
                                     o.cost_in_dollars ? *r.cost_usd : r.gpu_hours);
  }
  pareto_series.push_back(front_series);
  const std::string cost_label = o.cost_in_dollars ? "cost (USD)" : "cost (GPU-hours)";

  std::string h;
  h += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  h += "<title>podsim sweep: " + xml_escape(scenario.name) + "</title>\n";
  h += "<style>\nbody{font-family:sans-serif;margin:24px;color:#222;max-width:1400px}\n"
       "table{border-collapse:collapse;font-size:12px}\n"
       "th,td{border:1px solid #ccc;padding:3px 6px;text-align:right}\n"
       "td.l,th.l{text-align:left}\ntr.front td{background:#eef6ee}\n"
       "tr.base td{background:#fff3d6}\n.charts svg{margin:0 16px 16px 0;border:1px solid #eee}\n"
       "li{margin:2px 0}\n</style>\n</head>\n<body>\n";
  h += "<h1>podsim sweep: " + xml_escape(scenario.name) + "</h1>\n";
  h += "<p>Model " + xml_escape(scenario.model.name) + ", seq_len " +
       std::to_string(scenario.training.seq_len) + ", global batch " +
       std::to_string(scenario.training.global_batch) + ". " + xml_escape(counts_text(o)) +
       ". Expected time and cost to train " + tokens_text(o.tokens) +
       " tokens, the job's failures, checkpoint saves and restarts included.</p>\n";
  if (o.baseline) {
    const SweepOutcome::Baseline& b = *o.baseline;
    h += "<p>Scenario's own plan (" + xml_escape(sweep_plan_label(b.candidate)) + "): ";
    h += b.outcome.error.empty()
             ? "step " + xml_escape(format_seconds(b.outcome.step_time_s)) + ", MFU " +
                   xml_escape(format_percent(b.outcome.mfu)) + ", " +
                   xml_escape(baseline_rank_text(b)) + (b.index ? "" : " (outside the swept space)")
             : "failed: " + xml_escape(b.outcome.error);
    h += ".</p>\n";
  }
  h += "<h2>Best plan per GPU count</h2>\n<div class=\"charts\">\n";
  h += chart("Step time of the best plan", "GPUs", "step time (s)", time_series, true);
  h += chart("Cost to train of the best plan", "GPUs", cost_label, cost_series, true);
  h += "</div>\n<h2>Pareto front: time to train against cost</h2>\n<div class=\"charts\">\n";
  h += chart("Every simulated plan that fits; the front joined", "time to train (days)", cost_label,
             pareto_series, false);
  h += "</div>\n" + run_breakdown_html(o) + "<h2>Ranked plans</h2>\n";
  const size_t shown = std::min<size_t>(o.ranked.size(), std::max<size_t>(o.top_k, 200));
  h += "<p>The best " + std::to_string(shown) + " of " + std::to_string(o.ranked.size()) +
       " simulated plans that fit (all of them in results.csv). Green: on the Pareto front.</p>\n";
  h += "<table>\n<tr><th>rank</th><th>GPUs</th><th class=\"l\">GPU</th><th>tp</th><th>cp</th>"
       "<th>pp</th><th>dp</th><th>ep</th><th>etp</th><th>mb</th><th "
       "class=\"l\">schedule</th><th>v</th>"
       "<th class=\"l\">recompute</th><th>zero</th><th>shard</th><th>step (s)</th>"
       "<th>tokens/s</th><th>MFU</th><th>memory</th><th>headroom</th><th>exposed comm</th>"
       "<th>train time</th><th>ETTR</th><th>cost</th></tr>\n";
  for (size_t k = 0; k < shown; ++k) {
    const RankedPlan& r = o.ranked[k];
    const SweepCandidate& c = o.candidates[r.index];
    const strategies::ParallelPlan& p = c.plan;
    const SweepTarget& t = o.targets[c.target];
    const bool is_base = o.baseline && o.baseline->index && *o.baseline->index == r.index;
    h += std::string("<tr") +
         (is_base    ? " class=\"base\""
          : front[k] ? " class=\"front\""
                     : "") +
         "><td>" + std::to_string(k + 1) + "</td><td>" + std::to_string(t.gpus) +
         "</td><td class=\"l\">" + xml_escape(t.gpu) + "</td><td>" + std::to_string(p.tp) +
         "</td><td>" + std::to_string(p.cp) + "</td><td>" + std::to_string(p.pp) + "</td><td>" +
         std::to_string(p.dp) + "</td><td>" + std::to_string(p.ep) + "</td><td>" +
         std::to_string(p.expert_tp) + "</td><td>" + std::to_string(c.micro_batch) +
         "</td><td class=\"l\">" + (p.pp > 1 ? schedule_name(p.schedule) : "-") + "</td><td>" +
         std::to_string(p.virtual_stages) + "</td><td class=\"l\">" +
         xml_escape(recompute_name(p.recompute)) + "</td><td>" + std::to_string(p.zero) +
         "</td><td>" + (p.shard_group > 0 ? std::to_string(p.shard_group) : "-") + "</td><td>" +
         fixed(r.outcome.step_time_s, 4) + "</td><td>" + si_count(r.outcome.tokens_per_s) +
         "</td><td>" + xml_escape(format_percent(r.outcome.mfu)) + "</td><td>" +
         xml_escape(format_bytes(r.outcome.memory_peak_bytes)) + "</td><td>" +
         xml_escape(format_bytes(r.outcome.memory_capacity_bytes - r.outcome.memory_peak_bytes)) +
         "</td><td>" + xml_escape(format_seconds(r.outcome.exposed_comm_s)) + "</td><td>" +
         xml_escape(duration_text(r.train_time_s)) + "</td><td>" +
         xml_escape(format_percent(ettr(r))) + "</td><td>" + xml_escape(cost_text(o, r)) +
         "</td></tr>\n";
  }
  h += "</table>\n<h2>Hardware targets</h2>\n<ul>\n";
  for (const SweepTarget& t : o.targets) h += "<li>" + xml_escape(target_text(o, t)) + "</li>\n";
  h += "</ul>\n<ol>\n";
  for (const std::string& note : target_notes(o)) h += "<li>" + xml_escape(note) + "</li>\n";
  h += "</ol>\n<h2>Plans enumerated</h2>\n<ul>\n";
  for (const std::string& line : space) h += "<li>" + xml_escape(line) + "</li>\n";
  h += "</ul>\n";
  if (!o.failures.empty()) {
    h += "<h2>Failures</h2>\n<ul>\n";
    for (const std::string& f : o.failures) h += "<li>" + xml_escape(f) + "</li>\n";
    h += "</ul>\n";
  }
  h += "<p>Lower bounds skip only plans that provably cannot enter the top " +
       std::to_string(o.top_k) +
       " of their target; see docs/sweep.md. Generated by podsim sweep.</p>\n</body>\n</html>\n";
  return h;
}

}  // namespace podsim::scenarios
