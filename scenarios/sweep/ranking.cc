// What the ranking can and cannot tell apart: plans with identical
// simulated results collapse into one row, and plans within the model's
// measured error of their target's best are marked as tied with it.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "scenarios/input/quantity.h"
#include "scenarios/step/software.h"
#include "scenarios/sweep/sweep.h"
#include "strategies/job.h"
#include "strategies/schedule.h"

namespace podsim::scenarios {
namespace {

/// What a user compares twins by, from the plan's schedule (one
/// representative per stage, as the sweep simulates it).
struct TwinFacts {
  size_t collectives = 0;     ///< communication tasks of one step, all stages
  double standing_bytes = 0;  ///< memory held between steps, largest stage
};

TwinFacts twin_facts(const ScenarioSpec& scenario, const SweepCandidate& c) {
  strategies::Job job = job_of(scenario, c.plan);
  job.training.micro_batch = c.micro_batch;
  const strategies::BuildResult built =
      strategies::build_schedule(job, strategies::Scope::kRepresentatives);
  TwinFacts f;
  if (!built.schedule) return f;
  const strategies::Schedule& s = *built.schedule;
  for (const strategies::Task& t : s.tasks) {
    if (t.kind == strategies::TaskKind::kComm) ++f.collectives;
  }
  for (size_t r = 0; r < s.ranks.size(); ++r) {
    double bytes = 0;
    for (double b : strategies::standing_memory(s, r)) bytes += b;
    f.standing_bytes = std::max(f.standing_bytes, bytes);
  }
  return f;
}

/// The results a twin must match exactly.
auto result_key(const SweepOutcome& o, const RankedPlan& r) {
  return std::make_tuple(o.candidates[r.index].target, r.outcome.step_time_s,
                         r.outcome.memory_peak_bytes, r.outcome.exposed_comm_s,
                         r.outcome.bubble_fraction, r.outcome.tokens_per_s, r.train_time_s);
}

}  // namespace

void collapse_identical_plans(const ScenarioSpec& scenario, SweepOutcome& o) {
  using Key = decltype(result_key(o, o.ranked.front()));
  std::map<Key, std::vector<size_t>> groups;  // ranked indices, best first
  for (size_t k = 0; k < o.ranked.size(); ++k) {
    o.ranked[k].collapsed_into.reset();
    o.ranked[k].preferred_because.clear();
    groups[result_key(o, o.ranked[k])].push_back(k);
  }
  for (auto& group : groups) {
    // A named reference, not a structured binding: lambdas below capture it
    // (capturing a binding needs clang 16; Debian 12 ships clang 14).
    const std::vector<size_t>& members = group.second;
    if (members.size() < 2) continue;
    std::vector<TwinFacts> facts;
    for (size_t k : members) facts.push_back(twin_facts(scenario, o.candidates[o.ranked[k].index]));
    auto zero = [&](size_t m) { return o.candidates[o.ranked[members[m]].index].plan.zero; };
    auto better = [&](size_t a, size_t b) {
      return std::make_tuple(facts[a].collectives, facts[a].standing_bytes, zero(a),
                             o.ranked[members[a]].index) <
             std::make_tuple(facts[b].collectives, facts[b].standing_bytes, zero(b),
                             o.ranked[members[b]].index);
    };
    size_t best = 0;
    for (size_t m = 1; m < members.size(); ++m) {
      if (better(m, best)) best = m;
    }
    // Why: the first criterion on which it beats some twin.
    std::string because;
    for (size_t m = 0; m < members.size() && because.empty(); ++m) {
      if (m == best) continue;
      if (facts[best].collectives != facts[m].collectives) {
        because = "fewer collectives per step (" + std::to_string(facts[best].collectives) +
                  " vs " + std::to_string(facts[m].collectives) + ")";
      } else if (facts[best].standing_bytes != facts[m].standing_bytes) {
        because = "less memory held between steps (" + format_bytes(facts[best].standing_bytes) +
                  " vs " + format_bytes(facts[m].standing_bytes) + ")";
      }
    }
    if (because.empty()) {
      const bool lower_zero = std::any_of(members.begin(), members.end(), [&](size_t k) {
        return o.candidates[o.ranked[k].index].plan.zero != zero(best);
      });
      because = "the same " + std::to_string(facts[best].collectives) +
                " collectives per step and memory held; " +
                (lower_zero ? "the lower ZeRO stage is the simpler setting"
                            : "the first in canonical order");
    }
    const size_t keep = members[best];
    o.ranked[keep].preferred_because = because;
    for (size_t k : members) {
      if (k != keep) o.ranked[k].collapsed_into = keep;
    }
  }
}

void mark_ties(SweepOutcome& o, std::vector<std::optional<TargetModelError>> errors) {
  errors.resize(o.targets.size());
  std::vector<double> best(o.targets.size(), -1);
  for (const RankedPlan& r : o.ranked) {
    double& b = best[o.candidates[r.index].target];
    if (b < 0 || r.outcome.step_time_s < b) b = r.outcome.step_time_s;
  }
  for (RankedPlan& r : o.ranked) {
    const uint32_t t = o.candidates[r.index].target;
    r.tied_with_best = errors[t] && r.outcome.step_time_s <= best[t] * (1.0 + errors[t]->mape);
  }
  o.model_error = std::move(errors);
}

}  // namespace podsim::scenarios
