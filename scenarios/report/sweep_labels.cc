#include "scenarios/report/sweep_labels.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "scenarios/input/quantity.h"
#include "scenarios/report/svg.h"
#include "scenarios/report/sweep_report.h"

namespace podsim::scenarios::sweep_labels {

using strategies::ContextAlgorithm;
using strategies::Dim;
using strategies::PipelineSchedule;
using strategies::RecomputeMode;

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
    case PipelineSchedule::kDualPipe:
      return "dualpipe";
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
std::string dollars(double v) {
  // Appended, not "$" + si_count(v): GCC 12 warns falsely (-Wstringop-overflow)
  // on a literal + std::string&& here.
  std::string out = "$";
  out += si_count(v);
  return out;
}

/// "3.2 h", "12.5 days".
double ettr(const RankedPlan& r) {
  return r.train_time_s > 0 ? r.failure_free_time_s / r.train_time_s : 1.0;
}

std::string duration_text(double seconds) {
  if (seconds < 2 * 3600.0) return fixed(seconds / 60.0, 1) + " min";
  if (seconds < 2 * 86400.0) return fixed(seconds / 3600.0, 1) + " h";
  return fixed(seconds / 86400.0, 1) + " days";
}

std::string cost_text(const SweepOutcome& o, const RankedPlan& r) {
  if (o.cost_in_dollars && r.cost_usd) return dollars(*r.cost_usd);
  return si_count(r.gpu_hours) + " GPU-h";
}

std::vector<bool> front_flags(const SweepOutcome& o) {
  std::vector<bool> front(o.ranked.size(), false);
  for (size_t k : o.pareto) front[k] = true;
  return front;
}

std::string baseline_rank_text(const SweepOutcome& o) {
  const SweepOutcome::Baseline& b = *o.baseline;
  const HeadroomRequirement& h = o.min_headroom;
  if (!b.rank) return "not ranked";
  const double free_bytes = b.outcome.memory_capacity_bytes - b.outcome.memory_peak_bytes;
  if (b.outcome.fits && free_bytes < h.required_bytes(b.outcome.memory_capacity_bytes)) {
    return "leaves " + format_bytes(free_bytes) + " free, less than the " +
           format_bytes(h.required_bytes(b.outcome.memory_capacity_bytes)) +
           " asked for; by time to train alone it would take rank " + std::to_string(*b.rank);
  }
  std::string rank = "rank " + std::to_string(*b.rank);
  if (b.rank_worst && *b.rank_worst != *b.rank) {
    rank += " among the simulated plans (at worst " + std::to_string(*b.rank_worst) +
            " counting plans skipped by the bound)";
  }
  if (o.targets.size() > 1 && b.rank_in_target) {
    const SweepTarget& t = o.targets[b.target];
    rank += "; rank " + std::to_string(*b.rank_in_target) + " among the simulated plans of " +
            std::to_string(t.gpus) + " x " + t.gpu;
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
         " skipped by the bound (cannot reach the top " + std::to_string(o.top_k) +
         " of their target), " + std::to_string(o.plans_simulated) + " simulated (" +
         std::to_string(o.plans_not_fitting) + " over the memory capacity, " +
         (headroom_text(o).empty() ? std::string()
                                   : std::to_string(o.plans_below_headroom) +
                                         " with less free memory than " + headroom_text(o) + ", ") +
         std::to_string(o.plans_failed) + " failed)";
}

/// "16 x b200 (2 nodes, NVLink 900 GB/s, $5.25/GPU-h) [1][2]": the long
/// notes are numbered once (target_notes).
std::string target_text(const SweepOutcome& o, const SweepTarget& t) {
  std::string s = std::to_string(t.gpus) + " x " + t.gpu + " (" + std::to_string(t.cluster.nodes) +
                  (t.cluster.nodes == 1 ? " node" : " nodes") + ", scale-up " +
                  format_bandwidth(t.cluster.scale_up.bw_bytes_per_s) + ", " + price_text(t) + ")";
  const std::vector<std::string> notes = target_notes(o);
  for (const std::string* text : {&t.note, &t.price_source}) {
    const auto it = std::find(notes.begin(), notes.end(), *text);
    if (it != notes.end()) s += " [" + std::to_string(it - notes.begin() + 1) + "]";
  }
  return s;
}

std::vector<std::optional<size_t>> best_per_target(const SweepOutcome& o) {
  std::vector<std::optional<size_t>> best(o.targets.size());
  for (size_t k = 0; k < o.ranked.size(); ++k) {
    std::optional<size_t>& b = best[o.candidates[o.ranked[k].index].target];
    if (!b) b = k;
  }
  return best;
}

std::string price_text(const SweepTarget& t) {
  if (!t.price_per_gpu_hour) return "no price";
  // Appended piece by piece: GCC 12 flags '"$" + std::string&&' with a false
  // -Wstringop-overflow.
  std::string text = "$";
  text += fixed(*t.price_per_gpu_hour, 2);
  text += "/GPU-h";
  text += t.list_price ? " (list)" : " (reference)";
  return text;
}

std::string tokens_text(double tokens) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", tokens);
  return buf;
}

std::string swept_title(const ScenarioSpec& scenario, const SweepOutcome& o) {
  std::vector<std::string> counts, types;
  for (const SweepTarget& t : o.targets) {
    const std::string count = std::to_string(t.gpus);
    if (std::find(counts.begin(), counts.end(), count) == counts.end()) counts.push_back(count);
    if (std::find(types.begin(), types.end(), t.gpu) == types.end()) types.push_back(t.gpu);
  }
  auto either = [](const std::vector<std::string>& items) {
    std::string s;
    for (size_t i = 0; i < items.size(); ++i) {
      s += i == 0 ? "" : i + 1 == items.size() ? " or " : ", ";
      s += items[i];
    }
    return s;
  };
  // An inline model has no preset name: the scenario's name stands for it.
  const std::string model = scenario.model.name.empty() || scenario.model.name == "custom"
                                ? "the model of '" + scenario.name + "'"
                                : scenario.model.name;
  return model + ", seq " + std::to_string(scenario.training.seq_len) + ", global batch " +
         std::to_string(scenario.training.global_batch) + " on " + either(counts) + " GPUs of " +
         either(types);
}

namespace {

/// The words of `label` that `reference` does not have: "zero=2" for a
/// ZeRO-2 twin of a ZeRO-1 plan.
std::string label_difference(const std::string& reference, const std::string& label) {
  auto words = [](const std::string& text) {
    std::vector<std::string> out;
    size_t from = 0;
    while (from < text.size()) {
      const size_t space = text.find(' ', from);
      const size_t end = space == std::string::npos ? text.size() : space;
      if (end > from) out.push_back(text.substr(from, end - from));
      from = end + 1;
    }
    return out;
  };
  const std::vector<std::string> ref = words(reference);
  std::string out;
  for (const std::string& w : words(label)) {
    if (std::find(ref.begin(), ref.end(), w) != ref.end()) continue;
    if (!out.empty()) out += ' ';
    out += w;
  }
  return out.empty() ? label : out;
}

}  // namespace

std::string variant_names(const SweepOutcome& o, size_t k) {
  const std::string shown = sweep_plan_label(o.candidates[o.ranked[k].index]);
  std::string twins;
  for (size_t j = 0; j < o.ranked.size(); ++j) {
    if (o.ranked[j].collapsed_into != k) continue;
    if (!twins.empty()) twins += ", ";
    twins += label_difference(shown, sweep_plan_label(o.candidates[o.ranked[j].index]));
    twins += " (rank " + std::to_string(j + 1) + ")";
  }
  return twins;
}

std::string variants_text(const SweepOutcome& o, size_t k) {
  const std::string twins = variant_names(o, k);
  if (twins.empty()) return "";
  return "also " + twins + ", with identical results; shown: " + o.ranked[k].preferred_because;
}

std::vector<std::string> tie_lines(const SweepOutcome& o) {
  std::vector<std::string> out;
  for (size_t t = 0; t < o.model_error.size() && t < o.targets.size(); ++t) {
    const std::optional<TargetModelError>& e = o.model_error[t];
    if (!e) continue;
    // Appended piece by piece: GCC 12 warns falsely (-Wstringop-overflow) on
    // a literal + std::string&& (as in dollars()).
    std::string line = std::to_string(o.targets[t].gpus);
    line += " x " + o.targets[t].gpu + ": within " + format_percent(e->mape) +
            " of its fastest step, the validation MAPE of family " + e->family + " (" +
            std::to_string(e->cases) + " cases; " + e->basis + ")";
    out.push_back(std::move(line));
  }
  return out;
}

std::string headroom_text(const SweepOutcome& o) {
  const HeadroomRequirement& h = o.min_headroom;
  if (h.bytes <= 0 && h.fraction <= 0) return "";
  std::string s = "--min-headroom ";
  if (h.bytes > 0) s += format_bytes(h.bytes);
  if (h.fraction > 0)
    s += (h.bytes > 0 ? " and " : "") + format_percent(h.fraction) + " of the GPU's memory";
  return s;
}

}  // namespace podsim::scenarios::sweep_labels
