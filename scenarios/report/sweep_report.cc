#include "scenarios/report/sweep_report.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "scenarios/input/quantity.h"
#include "scenarios/report/run_report_format.h"
#include "scenarios/report/sweep_labels.h"
#include "scenarios/report/text_table.h"

namespace podsim::scenarios {

using nlohmann::json;
using strategies::PipelineSchedule;
using strategies::RecomputeMode;
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
using sweep_labels::variants_text;

namespace {

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
  j["failure_free_time_s"] = r.failure_free_time_s;
  j["gpu_hours"] = r.gpu_hours;
  if (r.run) j["run"] = run_report_to_json(*r.run);
  j["cost_usd"] = optional_number(r.cost_usd);
  j["pareto"] = on_front;
  j["tied_with_best"] = r.tied_with_best;
  j["collapsed_into_rank"] = r.collapsed_into ? json(*r.collapsed_into + 1) : json(nullptr);
  if (!r.preferred_because.empty()) j["preferred_because"] = r.preferred_because;
  return j;
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
  j["expert_tp"] = p.expert_tp;
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
  std::string s = "tp" + std::to_string(p.tp) + " cp" + std::to_string(p.cp);
  // The algorithm tells apart plans that are otherwise the same (it is swept).
  if (p.cp > 1) s += std::string(" ") + context_name(p.context);
  s += " pp" + std::to_string(p.pp) + " dp" + std::to_string(p.dp);
  if (p.ep > 1) s += " ep" + std::to_string(p.ep);
  if (p.expert_tp > 1) s += " etp" + std::to_string(p.expert_tp);
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
  const int64_t max_tp =
      targets.empty() ? 0 : default_max_tp(targets.front().cluster.scale_up_domain());
  const int64_t max_cp =
      space.max_cp > 0 ? space.max_cp : std::max<int64_t>(1, scenario.training.seq_len / 1024);
  auto list = [](const auto& values, auto name) {
    std::string s;
    for (const auto& v : values) s += (s.empty() ? "" : ", ") + name(v);
    return s;
  };
  out.push_back("tp: divisors of the GPU count up to " +
                (space.max_tp > 0 ? std::to_string(space.max_tp)
                                  : std::to_string(max_tp) + " (the scale-up domain, at most 8)") +
                "; cp: up to " + std::to_string(max_cp) +
                (space.max_cp > 0 ? "" : " (seq_len/1024: at least 1,024 tokens per CP rank)") +
                "; pp: up to " +
                (space.max_pp > 0 ? std::to_string(space.max_pp) : std::string("the layer count")) +
                "; dp: the remaining factor; MoE models only: ep a divisor of the expert "
                "count and expert_tp (up to the tp limit) of the expert FFN, ep x expert_tp "
                "dividing tp*cp*dp (Megatron-Core's parallel folding)" +
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
  out.push_back(
      "zero: " + list(space.zero, [](int z) { return std::to_string(z); }) +
      (space.hsdp && std::find(space.zero.begin(), space.zero.end(), 3) != space.zero.end()
           ? "; ZeRO-3 also as HSDP with every shard group dividing dp*cp"
           : "") +
      "; sharding only when dp*cp > 1");
  out.push_back("context-parallel algorithm (cp > 1): " +
                list(space.context_algorithms,
                     [](strategies::ContextAlgorithm a) { return std::string(context_name(a)); }));
  const SweepSpace::Pinned& pin = space.pinned;
  std::string pinned;
  for (const auto& [name, value] : std::vector<std::pair<const char*, std::optional<int64_t>>>{
           {"tp", pin.tp},
           {"cp", pin.cp},
           {"pp", pin.pp},
           {"dp", pin.dp},
           {"ep", pin.ep},
           {"expert_tp", pin.expert_tp},
           {"virtual_stages", pin.virtual_stages},
           {"shard_group", pin.shard_group}}) {
    if (value)
      pinned += (pinned.empty() ? "" : ", ") + std::string(name) + "=" + std::to_string(*value);
  }
  if (!pinned.empty()) out.push_back("pinned by --fix: " + pinned);
  out.push_back(
      std::string("kept from the scenario: sequence parallelism ") +
      (scenario.plan.sequence_parallel || scenario.plan.tp == 1 ? "on for every tp > 1" : "off") +
      ", rank order " + order_text(scenario.plan.order) + ", overlap options and model knobs");
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
  j["plans_below_headroom"] = o.plans_below_headroom;
  j["min_headroom"] = {{"bytes", o.min_headroom.bytes}, {"fraction", o.min_headroom.fraction}};
  j["failures"] = o.failures;
  j["title"] = swept_title(scenario, o);
  j["space"] = space;
  json targets = json::array();
  for (const SweepTarget& t : o.targets) {
    targets.push_back({{"gpu", t.gpu},
                       {"gpus", t.gpus},
                       {"nodes", t.cluster.nodes},
                       {"price_per_gpu_hour", optional_number(t.price_per_gpu_hour)},
                       {"price_source", t.price_source},
                       {"list_price", t.list_price},
                       {"note", t.note}});
  }
  j["targets"] = targets;
  json errors = json::array();
  for (size_t t = 0; t < o.targets.size(); ++t) {
    const std::optional<TargetModelError>* e =
        t < o.model_error.size() && o.model_error[t] ? &o.model_error[t] : nullptr;
    errors.push_back(e == nullptr ? json(nullptr)
                                  : json{{"mape", (*e)->mape},
                                         {"family", (*e)->family},
                                         {"cases", (*e)->cases},
                                         {"basis", (*e)->basis}});
  }
  j["model_error"] = errors;
  const std::vector<bool> front = front_flags(o);
  json results = json::array();
  for (size_t k = 0; k < o.ranked.size() && k < o.top_k; ++k) {
    results.push_back(result_json(o, k, front[k]));
  }
  j["results"] = results;
  json pareto = json::array();
  for (size_t k : o.pareto) pareto.push_back(result_json(o, k, true));
  j["pareto"] = pareto;
  json best = json::array();
  const std::vector<std::optional<size_t>> per_target = best_per_target(o);
  for (size_t t = 0; t < o.targets.size(); ++t) {
    best.push_back({{"target", t},
                    {"gpu", o.targets[t].gpu},
                    {"gpus", o.targets[t].gpus},
                    {"best", per_target[t] ? result_json(o, *per_target[t], front[*per_target[t]])
                                           : json(nullptr)}});
  }
  j["best_per_target"] = best;
  if (!scenario.plan_problems.empty()) {
    json problems = json::array();
    for (const Problem& p : scenario.plan_problems) problems.push_back(p.to_string());
    j["scenario_plan_problems"] = problems;
  }
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
    bj["rank_in_target"] = b.rank_in_target ? json(*b.rank_in_target) : json(nullptr);
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
      "rank,gpu,gpus,tp,cp,pp,dp,ep,expert_tp,micro_batch,sequence_parallel,zero,shard_group,"
      "schedule,"
      "virtual_stages,recompute,context,order,step_time_s,tokens_per_s,mfu,memory_peak_gib,"
      "memory_headroom_gib,exposed_comm_s,bubble_fraction,step_lower_bound_s,train_time_days,"
      "gpu_hours,cost_usd,pareto,failure_free_days,collapsed_into_rank,tied_with_best\n";
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
        std::to_string(p.expert_tp),
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
        front[k] ? "true" : "false",
        g9(r.failure_free_time_s / 86400.0),
        r.collapsed_into ? std::to_string(*r.collapsed_into + 1) : std::string(),
        r.tied_with_best ? "true" : "false"};
    for (size_t i = 0; i < cells.size(); ++i) {
      if (i > 0) out += ',';
      out += cells[i];
    }
    out += '\n';
  }
  return out;
}

namespace {

// Each target's fastest plan side by side: which hardware, at what cost.
std::vector<std::vector<std::string>> best_rows(const SweepOutcome& o) {
  std::vector<std::vector<std::string>> rows{{"GPUs", "type", "plan", "step", "tokens/s/GPU", "MFU",
                                              "headroom", "price", "train time", "cost", "rank"}};
  const std::vector<std::optional<size_t>> best = best_per_target(o);
  for (size_t t = 0; t < o.targets.size(); ++t) {
    const SweepTarget& target = o.targets[t];
    if (!best[t]) {
      rows.push_back({std::to_string(target.gpus), target.gpu, "no plan fits", "", "", "", "",
                      price_text(target), "", "", ""});
      continue;
    }
    const RankedPlan& r = o.ranked[*best[t]];
    rows.push_back({std::to_string(target.gpus), target.gpu,
                    sweep_plan_label(o.candidates[r.index]), format_seconds(r.outcome.step_time_s),
                    si_count(r.outcome.tokens_per_s / static_cast<double>(target.gpus)),
                    format_percent(r.outcome.mfu),
                    format_bytes(r.outcome.memory_capacity_bytes - r.outcome.memory_peak_bytes),
                    price_text(target), duration_text(r.train_time_s), cost_text(o, r),
                    std::to_string(*best[t] + 1)});
  }
  return rows;
}

/// "best" for a target's fastest plan, "tied" for one within the model's
/// error of it.
std::string tie_mark(const SweepOutcome& o, size_t k,
                     const std::vector<std::optional<size_t>>& best) {
  const uint32_t t = o.candidates[o.ranked[k].index].target;
  if (best[t] && *best[t] == k) return "best";
  return o.ranked[k].tied_with_best ? "tied" : "";
}

std::vector<std::vector<std::string>> table_rows(const SweepOutcome& o, size_t limit) {
  std::vector<std::vector<std::string>> rows{{"rank", "GPUs", "GPU", "plan", "step", "tokens/s",
                                              "MFU", "memory", "headroom", "exposed comm",
                                              "train time", "ETTR", "cost", "front", "vs best"}};
  const std::vector<bool> front = front_flags(o);
  const std::vector<std::optional<size_t>> best = best_per_target(o);
  for (size_t k = 0; k < o.ranked.size() && k < limit; ++k) {
    if (!own_row(o, k)) continue;
    const RankedPlan& r = o.ranked[k];
    const SweepCandidate& c = o.candidates[r.index];
    const SweepTarget& t = o.targets[c.target];
    rows.push_back({std::to_string(k + 1), std::to_string(t.gpus), t.gpu, sweep_plan_label(c),
                    format_seconds(r.outcome.step_time_s), si_count(r.outcome.tokens_per_s),
                    format_percent(r.outcome.mfu), format_bytes(r.outcome.memory_peak_bytes),
                    format_bytes(r.outcome.memory_capacity_bytes - r.outcome.memory_peak_bytes),
                    format_seconds(r.outcome.exposed_comm_s), duration_text(r.train_time_s),
                    format_percent(ettr(r)), cost_text(o, r), front[k] ? "*" : "",
                    tie_mark(o, k, best)});
  }
  return rows;
}

}  // namespace

std::string format_sweep_text(const ScenarioSpec& scenario, const SweepOutcome& o,
                              const std::vector<std::string>& space) {
  std::string out = "podsim sweep: " + swept_title(scenario, o) + "\n";
  out += "scenario: " + scenario.name + "\n";
  for (const SweepTarget& t : o.targets) out += "target: " + target_text(o, t) + "\n";
  out += counts_text(o) + "\n";
  if (!headroom_text(o).empty()) {
    out += "plans leaving less free memory than " + headroom_text(o) + " are not ranked\n";
  }
  out += "expected time and cost to train " + tokens_text(o.tokens) +
         " tokens (--tokens), the job's failures, checkpoint saves and restarts included "
         "(docs/goodput.md; ETTR = failure-free time / time); cost in " +
         (o.cost_in_dollars ? "dollars" : "GPU-hours (no price for every GPU)") + "\n\n";
  if (o.plans_total == 0) {
    out +=
        "No valid plan: no tp x cp x pp x dp split of these GPU counts passes the plan "
        "checks (dp must divide the global batch, pp at most the layer count, tp and cp "
        "within their limits, the --fix pins; see the space below). Try other --gpus.\n";
  } else if (o.ranked.empty()) {
    out += headroom_text(o).empty() ? "No plan fits in memory.\n"
                                    : "No plan fits in memory with " + headroom_text(o) + ".\n";
  } else {
    out +=
        "Best plan per GPU type and count (price: list = a public list price from the "
        "cluster preset, reference = podsim's comparison price)\n";
    out += format_columns(best_rows(o), "RLLRRRRLRRR") + "\n";
    size_t rows = 0;
    for (size_t k = 0; k < o.ranked.size() && k < o.top_k; ++k) rows += own_row(o, k) ? 1 : 0;
    const size_t top = std::min(o.top_k, o.ranked.size());
    out += "Top " + std::to_string(top) + " by expected time to train" +
           (rows < top ? " in " + std::to_string(rows) +
                             " rows (plans with identical results "
                             "share a row)"
                       : std::string()) +
           " (front: on the Pareto front of time against cost; vs best: tied = within the "
           "model's measured error of its target's fastest step)\n";
    out += format_columns(table_rows(o, o.top_k), "RRLLRRRRRRRRRLL") + "\n";
    std::string collapsed;
    for (size_t k = 0; k < o.ranked.size() && k < o.top_k; ++k) {
      const std::string v = own_row(o, k) ? variants_text(o, k) : std::string();
      if (!v.empty()) collapsed += "  rank " + std::to_string(k + 1) + ": " + v + "\n";
    }
    if (!collapsed.empty()) out += "Rows standing for several plans:\n" + collapsed;
    const std::vector<std::string> ties = tie_lines(o);
    if (!ties.empty()) {
      out += "Tied: the ranking cannot tell apart step times within the model's measured error:\n";
      for (const std::string& line : ties) out += "  " + line + "\n";
    }
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
  for (const Problem& p : scenario.plan_problems) {
    out += "\nScenario's own plan is invalid and left out (" + p.to_string() + ")\n";
  }
  if (o.baseline) {
    const SweepOutcome::Baseline& b = *o.baseline;
    out += "\nScenario's own plan (" + sweep_plan_label(b.candidate) + "): ";
    if (!b.outcome.error.empty()) {
      out += "failed: " + b.outcome.error + "\n";
    } else {
      out += "step " + format_seconds(b.outcome.step_time_s) + ", MFU " +
             format_percent(b.outcome.mfu) + ", " + baseline_rank_text(o) +
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

}  // namespace podsim::scenarios
