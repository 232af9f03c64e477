// report.html: the sweep for people, with inline SVG charts.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "scenarios/input/quantity.h"
#include "scenarios/report/svg.h"
#include "scenarios/report/sweep_charts.h"
#include "scenarios/report/sweep_labels.h"
#include "scenarios/report/sweep_report.h"

namespace podsim::scenarios {

using sweep_charts::Bar;
using sweep_charts::bar_chart;
using sweep_charts::chart;
using sweep_charts::palette;
using sweep_charts::Series;
using sweep_labels::baseline_rank_text;
using sweep_labels::best_per_target;
using sweep_labels::context_name;
using sweep_labels::cost_text;
using sweep_labels::counts_text;
using sweep_labels::dollars;
using sweep_labels::duration_text;
using sweep_labels::ettr;
using sweep_labels::fixed;
using sweep_labels::front_flags;
using sweep_labels::g9;
using sweep_labels::headroom_text;
using sweep_labels::kGiB;
using sweep_labels::order_text;
using sweep_labels::own_row;
using sweep_labels::price_text;
using sweep_labels::recompute_name;
using sweep_labels::schedule_name;
using sweep_labels::si_count;
using sweep_labels::swept_title;
using sweep_labels::target_notes;
using sweep_labels::target_text;
using sweep_labels::tie_lines;
using sweep_labels::tokens_text;
using sweep_labels::variant_names;

namespace {

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
      // Rounding can leave a part a hair below zero; "-0.0%" reads as a gain.
      const double share = std::max(0.0, run.mean.*part.seconds / run.mean.wall_s);
      h += "<td>" + xml_escape(format_percent(share)) + "</td>";
    }
    h += "</tr>\n";
  }
  return h + "</table>\n";
}

}  // namespace

namespace {

/// The best plan of each target, side by side (the table users sweep GPU
/// types and counts for).
std::string best_table_html(const SweepOutcome& o) {
  const std::vector<std::optional<size_t>> best = best_per_target(o);
  std::string h =
      "<h2>Best plan per GPU type and count</h2>\n<table>\n<tr><th>GPUs</th><th "
      "class=\"l\">type</th><th class=\"l\">plan</th><th>step</th><th>tokens/s/GPU</th>"
      "<th>MFU</th><th>headroom</th><th class=\"l\">price</th><th>train time</th><th>cost</th>"
      "<th>rank</th></tr>\n";
  for (size_t t = 0; t < o.targets.size(); ++t) {
    const SweepTarget& target = o.targets[t];
    h += "<tr><td>" + std::to_string(target.gpus) + "</td><td class=\"l\">" +
         xml_escape(target.gpu) + "</td>";
    if (!best[t]) {
      h += "<td class=\"l\">no plan fits</td><td></td><td></td><td></td><td></td><td "
           "class=\"l\">" +
           xml_escape(price_text(target)) + "</td><td></td><td></td><td></td></tr>\n";
      continue;
    }
    const RankedPlan& r = o.ranked[*best[t]];
    h += "<td class=\"l\">" + xml_escape(sweep_plan_label(o.candidates[r.index])) + "</td><td>" +
         xml_escape(format_seconds(r.outcome.step_time_s)) + "</td><td>" +
         si_count(r.outcome.tokens_per_s / static_cast<double>(target.gpus)) + "</td><td>" +
         xml_escape(format_percent(r.outcome.mfu)) + "</td><td>" +
         xml_escape(format_bytes(r.outcome.memory_capacity_bytes - r.outcome.memory_peak_bytes)) +
         "</td><td class=\"l\">" + xml_escape(price_text(target)) + "</td><td>" +
         xml_escape(duration_text(r.train_time_s)) + "</td><td>" + xml_escape(cost_text(o, r)) +
         "</td><td>" + std::to_string(*best[t] + 1) + "</td></tr>\n";
  }
  return h + "</table>\n";
}

}  // namespace

std::string sweep_html(const ScenarioSpec& scenario, const SweepOutcome& o,
                       const std::vector<std::string>& space) {
  const std::vector<bool> front = front_flags(o);
  const std::vector<std::optional<size_t>> best = best_per_target(o);
  std::vector<std::string> gpu_types;
  std::vector<int64_t> counts;
  for (const SweepTarget& t : o.targets) {
    if (std::find(gpu_types.begin(), gpu_types.end(), t.gpu) == gpu_types.end()) {
      gpu_types.push_back(t.gpu);
    }
    if (std::find(counts.begin(), counts.end(), t.gpus) == counts.end()) counts.push_back(t.gpus);
  }
  const std::vector<std::string>& colors = palette();
  auto cost_of = [&](const RankedPlan& r) { return o.cost_in_dollars ? *r.cost_usd : r.gpu_hours; };
  auto cost_label_of = [&](const RankedPlan& r) { return cost_text(o, r); };
  std::vector<Series> time_series, cost_series, pareto_series;
  std::vector<Bar> time_bars, cost_bars;
  for (size_t g = 0; g < gpu_types.size(); ++g) {
    const std::string& color = colors[g % colors.size()];
    Series ts{gpu_types[g], color, {}, true, 3.5, {}};
    Series cs = ts;
    Series ps{gpu_types[g], color, {}, false, 1.8, {}};
    for (size_t t = 0; t < o.targets.size(); ++t) {
      const SweepTarget& target = o.targets[t];
      if (target.gpu != gpu_types[g] || !best[t]) continue;
      const RankedPlan& r = o.ranked[*best[t]];
      ts.points.emplace_back(static_cast<double>(target.gpus), r.outcome.step_time_s);
      cs.points.emplace_back(static_cast<double>(target.gpus), cost_of(r));
      const std::string count = counts.size() > 1 ? std::to_string(target.gpus) + " GPUs" : "";
      time_bars.push_back({gpu_types[g], count, r.outcome.step_time_s,
                           format_seconds(r.outcome.step_time_s), color});
      cost_bars.push_back({gpu_types[g], count, cost_of(r), cost_label_of(r), color});
    }
    std::sort(ts.points.begin(), ts.points.end());
    std::sort(cs.points.begin(), cs.points.end());
    for (size_t k = 0; k < o.ranked.size() && k < 5000; ++k) {
      const RankedPlan& r = o.ranked[k];
      if (o.targets[o.candidates[r.index].target].gpu != gpu_types[g]) continue;
      ps.points.emplace_back(r.train_time_s / 86400.0, cost_of(r));
    }
    time_series.push_back(std::move(ts));
    cost_series.push_back(std::move(cs));
    pareto_series.push_back(std::move(ps));
  }
  Series front_series{"Pareto front", "#000000", {}, true, 3, {}};
  for (size_t k : o.pareto) {
    const RankedPlan& r = o.ranked[k];
    front_series.points.emplace_back(r.train_time_s / 86400.0, cost_of(r));
    front_series.labels.push_back("rank " + std::to_string(k + 1));
  }
  pareto_series.push_back(front_series);
  const std::string cost_label = o.cost_in_dollars ? "cost (USD)" : "cost (GPU-hours)";
  const std::string title = swept_title(scenario, o);

  std::string h;
  h += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  h += "<title>podsim sweep: " + xml_escape(title) + "</title>\n";
  h += "<style>\nbody{font-family:sans-serif;margin:24px;color:#222;max-width:1400px}\n"
       "table{border-collapse:collapse;font-size:12px}\n"
       "th,td{border:1px solid #ccc;padding:3px 6px;text-align:right;white-space:nowrap}\n"
       "td.l,th.l{text-align:left}\ntr.front td{background:#eef6ee}\n"
       "tr.base td{background:#fff3d6}\n.charts svg{margin:0 16px 16px 0;border:1px solid #eee}\n"
       "td.v{text-align:left;font-size:11px;color:#555;max-width:420px;white-space:normal}\n"
       "li{margin:2px 0}\n</style>\n</head>\n<body>\n";
  h += "<h1>podsim sweep: " + xml_escape(title) + "</h1>\n";
  h += "<p>Scenario: " + xml_escape(scenario.name) + ". " + xml_escape(counts_text(o)) +
       ". Expected time and cost to train " + tokens_text(o.tokens) +
       " tokens, the job's failures, checkpoint saves and restarts included.";
  if (!headroom_text(o).empty()) {
    h +=
        " Plans leaving less free memory than " + xml_escape(headroom_text(o)) + " are not ranked.";
  }
  h += "</p>\n";
  for (const Problem& p : scenario.plan_problems) {
    h += "<p>Scenario's own plan is invalid and left out: " + xml_escape(p.to_string()) + "</p>\n";
  }
  if (o.baseline) {
    const SweepOutcome::Baseline& b = *o.baseline;
    h += "<p>Scenario's own plan (" + xml_escape(sweep_plan_label(b.candidate)) + "): ";
    h += b.outcome.error.empty()
             ? "step " + xml_escape(format_seconds(b.outcome.step_time_s)) + ", MFU " +
                   xml_escape(format_percent(b.outcome.mfu)) + ", " +
                   xml_escape(baseline_rank_text(o)) + (b.index ? "" : " (outside the swept space)")
             : "failed: " + xml_escape(b.outcome.error);
    h += ".</p>\n";
  }
  h += best_table_html(o);
  h += "<h2>Step time and cost per GPU type</h2>\n<div class=\"charts\">\n";
  h += bar_chart("Step time of the best plan", "step time (s)", time_bars);
  h += bar_chart("Cost to train " + tokens_text(o.tokens) + " tokens, best plan", cost_label,
                 cost_bars);
  h += "</div>\n";
  if (counts.size() > 1) {
    h += "<h2>Best plan per GPU count</h2>\n<div class=\"charts\">\n";
    h += chart("Step time of the best plan", "GPUs", "step time (s)", time_series, true);
    h += chart("Cost to train of the best plan", "GPUs", cost_label, cost_series, true);
    h += "</div>\n";
  }
  h += "<h2>Pareto front: time to train against cost</h2>\n<div class=\"charts\">\n";
  h += chart("Every simulated plan that fits; the front joined", "time to train (days)", cost_label,
             pareto_series, false);
  h += "</div>\n" + run_breakdown_html(o) + "<h2>Ranked plans</h2>\n";
  const size_t shown = std::min<size_t>(o.ranked.size(), std::max<size_t>(o.top_k, 200));
  h += "<p>The best " + std::to_string(shown) + " of " + std::to_string(o.ranked.size()) +
       " simulated plans that fit (all of them in results.csv, where collapsed_into_rank names "
       "the row a plan shares). Plans with identical simulated results share one row, under "
       "\"identical variants\" (what their plans change, and their ranks); the row shows the one "
       "with the fewest collectives per step, else the least memory held between steps, else "
       "the lower ZeRO stage (hover for the reason). Green: on the Pareto front. vs best: tied = "
       "within the model's "
       "measured error of its target's fastest step.</p>\n";
  const std::vector<std::string> ties = tie_lines(o);
  if (!ties.empty()) {
    h += "<p>Tied means:</p>\n<ul>\n";
    for (const std::string& line : ties) h += "<li>" + xml_escape(line) + "</li>\n";
    h += "</ul>\n";
  }
  h += "<table>\n<tr><th>rank</th><th>GPUs</th><th class=\"l\">GPU</th><th>tp</th><th>cp</th>"
       "<th>pp</th><th>dp</th><th>ep</th><th>etp</th><th>mb</th><th "
       "class=\"l\">schedule</th><th>v</th>"
       "<th class=\"l\">recompute</th><th class=\"l\">cp alg</th><th>zero</th><th>shard</th>"
       "<th>step (s)</th><th>tokens/s</th><th>MFU</th><th>memory</th><th>headroom</th>"
       "<th>exposed comm</th><th>train time</th><th>ETTR</th><th>cost</th><th>vs best</th>"
       "<th class=\"l\">identical variants</th></tr>\n";
  for (size_t k = 0; k < shown; ++k) {
    if (!own_row(o, k)) continue;
    const RankedPlan& r = o.ranked[k];
    const SweepCandidate& c = o.candidates[r.index];
    const strategies::ParallelPlan& p = c.plan;
    const SweepTarget& t = o.targets[c.target];
    const bool is_base = o.baseline && o.baseline->index && *o.baseline->index == r.index;
    const std::string vs_best =
        best[c.target] && *best[c.target] == k ? "best" : (r.tied_with_best ? "tied" : "");
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
         xml_escape(recompute_name(p.recompute)) + "</td><td class=\"l\">" +
         (p.cp > 1 ? context_name(p.context) : "-") + "</td><td>" + std::to_string(p.zero) +
         "</td><td>" + (p.shard_group > 0 ? std::to_string(p.shard_group) : "-") + "</td><td>" +
         fixed(r.outcome.step_time_s, 4) + "</td><td>" + si_count(r.outcome.tokens_per_s) +
         "</td><td>" + xml_escape(format_percent(r.outcome.mfu)) + "</td><td>" +
         xml_escape(format_bytes(r.outcome.memory_peak_bytes)) + "</td><td>" +
         xml_escape(format_bytes(r.outcome.memory_capacity_bytes - r.outcome.memory_peak_bytes)) +
         "</td><td>" + xml_escape(format_seconds(r.outcome.exposed_comm_s)) + "</td><td>" +
         xml_escape(duration_text(r.train_time_s)) + "</td><td>" +
         xml_escape(format_percent(ettr(r))) + "</td><td>" + xml_escape(cost_text(o, r)) +
         "</td><td>" + vs_best + "</td><td class=\"v\" title=\"" + xml_escape(r.preferred_because) +
         "\">" + xml_escape(variant_names(o, k)) + "</td></tr>\n";
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
