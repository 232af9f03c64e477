#include "scenarios/report/sweep_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "scenarios/input/quantity.h"
#include "scenarios/report/svg.h"
#include "scenarios/report/text_table.h"
#include "strategies/job.h"

namespace podsim::scenarios {
namespace {

using nlohmann::json;
using strategies::ContextAlgorithm;
using strategies::Dim;
using strategies::PipelineSchedule;
using strategies::RecomputeMode;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

const char* schedule_name(PipelineSchedule s) {
  switch (s) {
    case PipelineSchedule::kGpipe:
      return "gpipe";
    case PipelineSchedule::kOneFOneB:
      return "1f1b";
    case PipelineSchedule::kInterleavedOneFOneB:
      return "interleaved_1f1b";
    case PipelineSchedule::kZeroBubble:
      return "zero_bubble";
  }
  return "1f1b";
}

const char* context_name(ContextAlgorithm a) {
  switch (a) {
    case ContextAlgorithm::kRing:
      return "ring";
    case ContextAlgorithm::kUlysses:
      return "ulysses";
    case ContextAlgorithm::kAllGather:
      return "all_gather";
  }
  return "ring";
}

std::string recompute_name(const strategies::Recompute& r) {
  switch (r.mode) {
    case RecomputeMode::kNone:
      return "none";
    case RecomputeMode::kSelective:
      return "selective";
    case RecomputeMode::kFull:
      return "full";
    case RecomputeMode::kEvery:
      return "every " + std::to_string(r.every_layers);
  }
  return "none";
}

std::string order_text(const std::array<Dim, strategies::kDims>& order) {
  std::string out;
  for (Dim d : order) {
    if (!out.empty()) out += '-';
    switch (d) {
      case Dim::kTp:
        out += "tp";
        break;
      case Dim::kCp:
        out += "cp";
        break;
      case Dim::kEp:
        out += "ep";
        break;
      case Dim::kDp:
        out += "dp";
        break;
      case Dim::kPp:
        out += "pp";
        break;
    }
  }
  return out;
}

/// %.9g: enough digits to tell plans apart, same text for the same value.
std::string g9(double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

std::string fixed(double v, int decimals) { return fixed_number(v, decimals); }

/// "1.44M", "812k", "950".
std::string si_count(double v) {
  if (v >= 1e9) return fixed(v / 1e9, 2) + "G";
  if (v >= 1e6) return fixed(v / 1e6, 2) + "M";
  if (v >= 1e3) return fixed(v / 1e3, 1) + "k";
  return fixed(v, 0);
}

/// "$1.23M", "$812k", "$950".
std::string dollars(double v) { return "$" + si_count(v); }

/// "3.2 h", "12.5 days".
std::string duration_text(double seconds) {
  if (seconds < 2 * 3600.0) return fixed(seconds / 60.0, 1) + " min";
  if (seconds < 2 * 86400.0) return fixed(seconds / 3600.0, 1) + " h";
  return fixed(seconds / 86400.0, 1) + " days";
}

std::string cost_text(const SweepOutcome& o, const RankedPlan& r) {
  if (o.cost_in_dollars && r.cost_usd) return dollars(*r.cost_usd);
  return si_count(r.gpu_hours) + " GPU-h";
}

json optional_number(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

json result_json(const SweepOutcome& o, size_t k, bool on_front) {
  const RankedPlan& r = o.ranked[k];
  const SweepCandidate& c = o.candidates[r.index];
  json j;
  j["rank"] = k + 1;
  j["plan"] = sweep_plan_json(c, o.targets[c.target]);
  j["step_time_s"] = r.outcome.step_time_s;
  j["tokens_per_s"] = r.outcome.tokens_per_s;
  j["mfu"] = r.outcome.mfu;
  j["memory_peak_bytes"] = r.outcome.memory_peak_bytes;
  j["memory_capacity_bytes"] = r.outcome.memory_capacity_bytes;
  j["memory_headroom_bytes"] = r.outcome.memory_capacity_bytes - r.outcome.memory_peak_bytes;
  j["exposed_comm_s"] = r.outcome.exposed_comm_s;
  j["bubble_fraction"] = r.outcome.bubble_fraction;
  j["step_lower_bound_s"] = r.step_lower_bound_s;
  j["train_time_s"] = r.train_time_s;
  j["gpu_hours"] = r.gpu_hours;
  j["cost_usd"] = optional_number(r.cost_usd);
  j["pareto"] = on_front;
  return j;
}

std::vector<bool> front_flags(const SweepOutcome& o) {
  std::vector<bool> front(o.ranked.size(), false);
  for (size_t k : o.pareto) front[k] = true;
  return front;
}

std::string baseline_rank_text(const SweepOutcome::Baseline& b) {
  if (!b.rank) return "not ranked";
  std::string rank = "rank " + std::to_string(*b.rank);
  if (b.rank_worst && *b.rank_worst != *b.rank) {
    rank += " among the simulated plans (at worst " + std::to_string(*b.rank_worst) +
            " counting plans skipped by the bound)";
  }
  if (b.outcome.fits) return rank;
  return "does not fit in memory (peak " + format_bytes(b.outcome.memory_peak_bytes) + " of " +
         format_bytes(b.outcome.memory_capacity_bytes) + "); by step time alone it would take " +
         rank;
}

/// The targets' notes and price sources, each once, in order of appearance.
std::vector<std::string> target_notes(const SweepOutcome& o) {
  std::vector<std::string> notes;
  for (const SweepTarget& t : o.targets) {
    for (const std::string* text : {&t.note, &t.price_source}) {
      if (!text->empty() && std::find(notes.begin(), notes.end(), *text) == notes.end()) {
        notes.push_back(*text);
      }
    }
  }
  return notes;
}

std::string counts_text(const SweepOutcome& o) {
  return std::to_string(o.plans_total) + " valid plans: " + std::to_string(o.plans_pruned_memory) +
         " pruned by the memory bound, " + std::to_string(o.plans_skipped_by_bound) +
         " skipped by the step-time bound (cannot reach the top " + std::to_string(o.top_k) +
         " of their target), " + std::to_string(o.plans_simulated) + " simulated (" +
         std::to_string(o.plans_not_fitting) + " over the memory capacity, " +
         std::to_string(o.plans_failed) + " failed)";
}

/// "16 x b200 (2 nodes, NVLink 900 GB/s, $5.25/GPU-h) [1][2]": the long
/// notes are numbered once (target_notes).
std::string target_text(const SweepOutcome& o, const SweepTarget& t) {
  std::string s = std::to_string(t.gpus) + " x " + t.gpu + " (" + std::to_string(t.cluster.nodes) +
                  (t.cluster.nodes == 1 ? " node" : " nodes") + ", scale-up " +
                  format_bandwidth(t.cluster.scale_up.bw_bytes_per_s) + ", " +
                  (t.price_per_gpu_hour ? "$" + fixed(*t.price_per_gpu_hour, 2) + "/GPU-h"
                                        : std::string("no price")) +
                  ")";
  const std::vector<std::string> notes = target_notes(o);
  for (const std::string* text : {&t.note, &t.price_source}) {
    const auto it = std::find(notes.begin(), notes.end(), *text);
    if (it != notes.end()) s += " [" + std::to_string(it - notes.begin() + 1) + "]";
  }
  return s;
}

// ---- Charts --------------------------------------------------------------

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

}  // namespace

json sweep_plan_json(const SweepCandidate& c, const SweepTarget& target) {
  const strategies::ParallelPlan& p = c.plan;
  json j;
  j["dp"] = p.dp;
  j["tp"] = p.tp;
  j["pp"] = p.pp;
  j["cp"] = p.cp;
  j["ep"] = p.ep;
  j["sequence_parallel"] = p.sequence_parallel;
  j["zero"] = p.zero;
  if (p.shard_group > 0) j["shard_group"] = p.shard_group;
  j["pipeline"] = {{"schedule", schedule_name(p.schedule)}, {"virtual_stages", p.virtual_stages}};
  j["context"] = {{"algorithm", context_name(p.context)}};
  if (p.recompute.mode == RecomputeMode::kEvery) {
    j["recompute"] = {{"every", p.recompute.every_layers}};
  } else {
    j["recompute"] = recompute_name(p.recompute);
  }
  j["order"] = order_text(p.order);
  j["micro_batch"] = c.micro_batch;
  j["gpus"] = target.gpus;
  j["gpu"] = target.gpu;
  return j;
}

std::string sweep_plan_label(const SweepCandidate& c) {
  const strategies::ParallelPlan& p = c.plan;
  std::string s = "tp" + std::to_string(p.tp) + " cp" + std::to_string(p.cp) + " pp" +
                  std::to_string(p.pp) + " dp" + std::to_string(p.dp);
  if (p.ep > 1) s += " ep" + std::to_string(p.ep);
  s += " mb" + std::to_string(c.micro_batch);
  if (p.pp > 1) {
    s += std::string(" ") + schedule_name(p.schedule);
    if (p.virtual_stages > 1) s += " v" + std::to_string(p.virtual_stages);
  }
  s += " recompute=" + recompute_name(p.recompute);
  s += " zero=" + std::to_string(p.zero);
  if (p.shard_group > 0) s += " shard=" + std::to_string(p.shard_group);
  return s;
}

std::vector<std::string> describe_sweep_space(const ScenarioSpec& scenario,
                                              const std::vector<SweepTarget>& targets,
                                              const SweepSpace& space) {
  std::vector<std::string> out;
  const int64_t domain = targets.empty() ? 0
                         : targets.front().cluster.scale_up.domain > 0
                             ? targets.front().cluster.scale_up.domain
                             : targets.front().cluster.gpus_per_node;
  const int64_t max_cp =
      space.max_cp > 0 ? space.max_cp : std::max<int64_t>(1, scenario.training.seq_len / 1024);
  auto list = [](const auto& values, auto name) {
    std::string s;
    for (const auto& v : values) s += (s.empty() ? "" : ", ") + name(v);
    return s;
  };
  out.push_back("tp: divisors of the GPU count up to " +
                (space.max_tp > 0 ? std::to_string(space.max_tp)
                                  : std::to_string(domain) + " (the scale-up domain)") +
                "; cp: up to " + std::to_string(max_cp) +
                (space.max_cp > 0 ? "" : " (seq_len/1024: at least 1,024 tokens per CP rank)") +
                "; pp: up to " +
                (space.max_pp > 0 ? std::to_string(space.max_pp) : std::string("the layer count")) +
                "; dp: the remaining factor; ep: divisors of the expert count dividing dp*cp "
                "(MoE models only)" +
                (space.powers_of_two ? "; powers of two only" : ""));
  out.push_back(
      "micro-batch: " + list(space.micro_batches, [](int64_t v) { return std::to_string(v); }) +
      " (dividing global_batch / dp)");
  out.push_back(
      "pipeline (pp > 1): " +
      list(space.schedules, [](PipelineSchedule s) { return std::string(schedule_name(s)); }) +
      ", interleaved with 2.." + std::to_string(space.max_virtual_stages) +
      " virtual stages dividing ceil(layers / pp); pp = 1 runs 1f1b (no pipeline)");
  out.push_back("recompute: " + list(space.recompute, [](RecomputeMode m) {
                  return recompute_name(strategies::Recompute{m, 0});
                }));
  out.push_back("zero: " + list(space.zero, [](int z) { return std::to_string(z); }) +
                (space.hsdp ? "; ZeRO-3 also as HSDP with every shard group dividing dp*cp" : "") +
                "; sharding only when dp*cp > 1");
  out.push_back(
      std::string("kept from the scenario: sequence parallelism ") +
      (scenario.plan.sequence_parallel || scenario.plan.tp == 1 ? "on for every tp > 1" : "off") +
      ", context algorithm " + context_name(scenario.plan.context) + ", rank order " +
      order_text(scenario.plan.order) + ", overlap options and model knobs");
  out.push_back(
      "valid = strategies::validate accepts the plan (tp divides the heads, "
      "kv heads and ffn, micro-batches fit the pipeline schedule, ...)");
  return out;
}

json sweep_to_json(const ScenarioSpec& scenario, const SweepOutcome& o,
                   const std::vector<std::string>& space) {
  json j;
  j["scenario"] = scenario.name;
  j["model"] = scenario.model.name;
  j["seq_len"] = scenario.training.seq_len;
  j["global_batch"] = scenario.training.global_batch;
  j["tokens"] = o.tokens;
  j["cost_axis"] = o.cost_in_dollars ? "usd" : "gpu_hours";
  j["top_k"] = o.top_k;
  j["plans_total"] = o.plans_total;
  j["plans_pruned_memory"] = o.plans_pruned_memory;
  j["plans_skipped_by_bound"] = o.plans_skipped_by_bound;
  j["plans_simulated"] = o.plans_simulated;
  j["plans_not_fitting"] = o.plans_not_fitting;
  j["plans_failed"] = o.plans_failed;
  j["failures"] = o.failures;
  j["space"] = space;
  json targets = json::array();
  for (const SweepTarget& t : o.targets) {
    targets.push_back({{"gpu", t.gpu},
                       {"gpus", t.gpus},
                       {"nodes", t.cluster.nodes},
                       {"price_per_gpu_hour", optional_number(t.price_per_gpu_hour)},
                       {"price_source", t.price_source},
                       {"note", t.note}});
  }
  j["targets"] = targets;
  const std::vector<bool> front = front_flags(o);
  json results = json::array();
  for (size_t k = 0; k < o.ranked.size() && k < o.top_k; ++k) {
    results.push_back(result_json(o, k, front[k]));
  }
  j["results"] = results;
  json pareto = json::array();
  for (size_t k : o.pareto) pareto.push_back(result_json(o, k, true));
  j["pareto"] = pareto;
  if (o.baseline) {
    const SweepOutcome::Baseline& b = *o.baseline;
    json bj;
    bj["plan"] = sweep_plan_json(b.candidate, o.targets[b.target]);
    bj["in_space"] = b.index.has_value();
    bj["fits"] = b.outcome.fits;
    bj["step_time_s"] = b.outcome.step_time_s;
    bj["tokens_per_s"] = b.outcome.tokens_per_s;
    bj["mfu"] = b.outcome.mfu;
    bj["memory_peak_bytes"] = b.outcome.memory_peak_bytes;
    bj["rank"] = b.rank ? json(*b.rank) : json(nullptr);
    bj["rank_worst"] = b.rank_worst ? json(*b.rank_worst) : json(nullptr);
    if (!b.outcome.error.empty()) bj["error"] = b.outcome.error;
    j["baseline"] = bj;
  } else {
    j["baseline"] = nullptr;
  }
  return j;
}

std::string sweep_json_text(const ScenarioSpec& scenario, const SweepOutcome& outcome,
                            const std::vector<std::string>& space) {
  return sweep_to_json(scenario, outcome, space).dump(2) + "\n";
}

std::string sweep_csv(const SweepOutcome& o) {
  std::string out =
      "rank,gpu,gpus,tp,cp,pp,dp,ep,micro_batch,sequence_parallel,zero,shard_group,schedule,"
      "virtual_stages,recompute,context,order,step_time_s,tokens_per_s,mfu,memory_peak_gib,"
      "memory_headroom_gib,exposed_comm_s,bubble_fraction,step_lower_bound_s,train_time_days,"
      "gpu_hours,cost_usd,pareto\n";
  const std::vector<bool> front = front_flags(o);
  for (size_t k = 0; k < o.ranked.size(); ++k) {
    const RankedPlan& r = o.ranked[k];
    const SweepCandidate& c = o.candidates[r.index];
    const strategies::ParallelPlan& p = c.plan;
    const SweepTarget& t = o.targets[c.target];
    std::vector<std::string> cells{
        std::to_string(k + 1),
        t.gpu,
        std::to_string(t.gpus),
        std::to_string(p.tp),
        std::to_string(p.cp),
        std::to_string(p.pp),
        std::to_string(p.dp),
        std::to_string(p.ep),
        std::to_string(c.micro_batch),
        p.sequence_parallel ? "true" : "false",
        std::to_string(p.zero),
        std::to_string(p.shard_group),
        schedule_name(p.schedule),
        std::to_string(p.virtual_stages),
        recompute_name(p.recompute),
        context_name(p.context),
        order_text(p.order),
        g9(r.outcome.step_time_s),
        g9(r.outcome.tokens_per_s),
        g9(r.outcome.mfu),
        g9(r.outcome.memory_peak_bytes / kGiB),
        g9((r.outcome.memory_capacity_bytes - r.outcome.memory_peak_bytes) / kGiB),
        g9(r.outcome.exposed_comm_s),
        g9(r.outcome.bubble_fraction),
        g9(r.step_lower_bound_s),
        g9(r.train_time_s / 86400.0),
        g9(r.gpu_hours),
        r.cost_usd ? g9(*r.cost_usd) : std::string(),
        front[k] ? "true" : "false"};
    for (size_t i = 0; i < cells.size(); ++i) {
      if (i > 0) out += ',';
      out += cells[i];
    }
    out += '\n';
  }
  return out;
}

namespace {

std::vector<std::vector<std::string>> table_rows(const SweepOutcome& o, size_t limit) {
  std::vector<std::vector<std::string>> rows{{"rank", "GPUs", "GPU", "plan", "step", "tokens/s",
                                              "MFU", "memory", "headroom", "exposed comm",
                                              "train time", "cost", "front"}};
  const std::vector<bool> front = front_flags(o);
  for (size_t k = 0; k < o.ranked.size() && k < limit; ++k) {
    const RankedPlan& r = o.ranked[k];
    const SweepCandidate& c = o.candidates[r.index];
    const SweepTarget& t = o.targets[c.target];
    rows.push_back({std::to_string(k + 1), std::to_string(t.gpus), t.gpu, sweep_plan_label(c),
                    format_seconds(r.outcome.step_time_s), si_count(r.outcome.tokens_per_s),
                    format_percent(r.outcome.mfu), format_bytes(r.outcome.memory_peak_bytes),
                    format_bytes(r.outcome.memory_capacity_bytes - r.outcome.memory_peak_bytes),
                    format_seconds(r.outcome.exposed_comm_s), duration_text(r.train_time_s),
                    cost_text(o, r), front[k] ? "*" : ""});
  }
  return rows;
}

std::string tokens_text(double tokens) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", tokens);
  return buf;
}

}  // namespace

std::string format_sweep_text(const ScenarioSpec& scenario, const SweepOutcome& o,
                              const std::vector<std::string>& space) {
  std::string out = "podsim sweep: " + scenario.name + "\n";
  out += "model " + scenario.model.name + ", seq_len " + std::to_string(scenario.training.seq_len) +
         ", global batch " + std::to_string(scenario.training.global_batch) + "\n";
  for (const SweepTarget& t : o.targets) out += "target: " + target_text(o, t) + "\n";
  out += counts_text(o) + "\n";
  out += "time and cost to train " + tokens_text(o.tokens) + " tokens (--tokens); cost in " +
         (o.cost_in_dollars ? "dollars" : "GPU-hours (no price for every GPU)") + "\n\n";
  if (o.plans_total == 0) {
    out +=
        "No valid plan: no tp x cp x pp x dp split of these GPU counts passes the plan "
        "checks (dp must divide the global batch, pp at most the layer count, tp and cp "
        "within their limits; see the space below). Try other --gpus.\n";
  } else if (o.ranked.empty()) {
    out += "No plan fits in memory.\n";
  } else {
    out += "Top " + std::to_string(std::min(o.top_k, o.ranked.size())) +
           " by step time (front: on the Pareto front of time against cost)\n";
    out += format_columns(table_rows(o, o.top_k), "RRLLRRRRRRRRL") + "\n";
    out += "Pareto front (time to train vs cost):";
    for (size_t k : o.pareto) {
      const RankedPlan& r = o.ranked[k];
      const SweepCandidate& c = o.candidates[r.index];
      out += "\n  rank " + std::to_string(k + 1) + ": " + std::to_string(o.targets[c.target].gpus) +
             " x " + o.targets[c.target].gpu + ", " + sweep_plan_label(c) + ", " +
             duration_text(r.train_time_s) + ", " + cost_text(o, r);
    }
    out += "\n";
  }
  if (o.baseline) {
    const SweepOutcome::Baseline& b = *o.baseline;
    out += "\nScenario's own plan (" + sweep_plan_label(b.candidate) + "): ";
    if (!b.outcome.error.empty()) {
      out += "failed: " + b.outcome.error + "\n";
    } else {
      out += "step " + format_seconds(b.outcome.step_time_s) + ", MFU " +
             format_percent(b.outcome.mfu) + ", " + baseline_rank_text(b) +
             (b.index ? "" : " (outside the swept space)") + "\n";
    }
  }
  if (!o.failures.empty()) {
    out += "\nFailures (first " + std::to_string(o.failures.size()) + "):\n";
    for (const std::string& f : o.failures) out += "  " + f + "\n";
  }
  out += "\nPlans enumerated:\n";
  for (const std::string& line : space) out += "  " + line + "\n";
  out += "\nNotes:\n";
  const std::vector<std::string> notes = target_notes(o);
  for (size_t i = 0; i < notes.size(); ++i) {
    out += "  [" + std::to_string(i + 1) + "] " + notes[i] + "\n";
  }
  return out;
}

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
       ". Time and cost to train " + tokens_text(o.tokens) + " tokens.</p>\n";
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
  h += "</div>\n<h2>Ranked plans</h2>\n";
  const size_t shown = std::min<size_t>(o.ranked.size(), std::max<size_t>(o.top_k, 200));
  h += "<p>The " + std::to_string(shown) + " fastest of " + std::to_string(o.ranked.size()) +
       " simulated plans that fit (all of them in results.csv). Green: on the Pareto front.</p>\n";
  h += "<table>\n<tr><th>rank</th><th>GPUs</th><th class=\"l\">GPU</th><th>tp</th><th>cp</th>"
       "<th>pp</th><th>dp</th><th>ep</th><th>mb</th><th class=\"l\">schedule</th><th>v</th>"
       "<th class=\"l\">recompute</th><th>zero</th><th>shard</th><th>step (s)</th>"
       "<th>tokens/s</th><th>MFU</th><th>memory</th><th>headroom</th><th>exposed comm</th>"
       "<th>train time</th><th>cost</th></tr>\n";
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
         std::to_string(c.micro_batch) + "</td><td class=\"l\">" +
         (p.pp > 1 ? schedule_name(p.schedule) : "-") + "</td><td>" +
         std::to_string(p.virtual_stages) + "</td><td class=\"l\">" +
         xml_escape(recompute_name(p.recompute)) + "</td><td>" + std::to_string(p.zero) +
         "</td><td>" + (p.shard_group > 0 ? std::to_string(p.shard_group) : "-") + "</td><td>" +
         fixed(r.outcome.step_time_s, 4) + "</td><td>" + si_count(r.outcome.tokens_per_s) +
         "</td><td>" + xml_escape(format_percent(r.outcome.mfu)) + "</td><td>" +
         xml_escape(format_bytes(r.outcome.memory_peak_bytes)) + "</td><td>" +
         xml_escape(format_bytes(r.outcome.memory_capacity_bytes - r.outcome.memory_peak_bytes)) +
         "</td><td>" + xml_escape(format_seconds(r.outcome.exposed_comm_s)) + "</td><td>" +
         xml_escape(duration_text(r.train_time_s)) + "</td><td>" + xml_escape(cost_text(o, r)) +
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
