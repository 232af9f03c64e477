#include "scenarios/sweep/plan_space.h"

#include <algorithm>
#include <numeric>
#include <utility>
#include <vector>

#include "scenarios/step/software.h"
#include "sim/ceil_div.h"
#include "strategies/job.h"
#include "strategies/schedule.h"

namespace podsim::scenarios {
namespace {

using strategies::ParallelPlan;
using strategies::PipelineSchedule;

std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> small, large;
  for (int64_t d = 1; d * d <= n; ++d) {
    if (n % d != 0) continue;
    small.push_back(d);
    if (d != n / d) large.push_back(n / d);
  }
  small.insert(small.end(), large.rbegin(), large.rend());
  return small;
}

bool power_of_two(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

}  // namespace

std::vector<SweepCandidate> enumerate_plans(const ScenarioSpec& scenario,
                                            const std::vector<SweepTarget>& targets,
                                            const SweepSpace& space) {
  std::vector<SweepCandidate> out;
  const strategies::ModelShape& model = scenario.model;
  const int64_t layers = model.layers;
  const bool moe = model.moe.has_value();
  const bool sp = scenario.plan.sequence_parallel || scenario.plan.tp == 1;
  std::vector<int64_t> micro_batches = space.micro_batches;
  std::sort(micro_batches.begin(), micro_batches.end());
  micro_batches.erase(std::unique(micro_batches.begin(), micro_batches.end()), micro_batches.end());
  auto allowed = [&](int64_t degree) { return !space.powers_of_two || power_of_two(degree); };
  const SweepSpace::Pinned& pinned = space.pinned;
  auto pinned_to = [](const std::optional<int64_t>& pin, int64_t value) {
    return !pin || *pin == value;
  };

  for (size_t ti = 0; ti < targets.size(); ++ti) {
    const SweepTarget& target = targets[ti];
    const int64_t g = target.gpus;
    const int64_t max_tp = pinned.tp          ? *pinned.tp
                           : space.max_tp > 0 ? space.max_tp
                                              : default_max_tp(target.cluster.scale_up_domain());
    const int64_t max_cp = pinned.cp ? *pinned.cp
                           : space.max_cp > 0
                               ? space.max_cp
                               : std::max<int64_t>(1, scenario.training.seq_len / 1024);
    const int64_t max_pp = space.max_pp > 0 ? space.max_pp : layers;
    for (int64_t tp : divisors(g)) {
      if (tp > max_tp || !allowed(tp) || !pinned_to(pinned.tp, tp)) continue;
      for (int64_t cp : divisors(g / tp)) {
        if (cp > max_cp || !allowed(cp) || !pinned_to(pinned.cp, cp)) continue;
        for (int64_t pp : divisors(g / tp / cp)) {
          if (pp > max_pp || !allowed(pp) || !pinned_to(pinned.pp, pp)) continue;
          const int64_t dp = g / tp / cp / pp;
          if (!pinned_to(pinned.dp, dp)) continue;
          // MoE parallel folding: expert_tp x ep regroups the tp*cp*dp
          // ranks of a stage (Megatron-Core), whatever tp and cp are.
          std::vector<std::pair<int64_t, int64_t>> expert_splits{{1, 1}};
          if (moe) {
            expert_splits.clear();
            const int64_t stage_ranks = tp * cp * dp;
            const int64_t max_etp = space.max_expert_tp > 0 ? space.max_expert_tp : max_tp;
            for (int64_t ep : divisors(model.moe->experts)) {
              if (stage_ranks % ep != 0 || !allowed(ep)) continue;
              for (int64_t etp : divisors(stage_ranks / ep)) {
                if (etp > max_etp || !allowed(etp) || model.moe->ffn_hidden % etp != 0) continue;
                expert_splits.emplace_back(ep, etp);
              }
            }
          }
          for (const auto& [ep, etp] : expert_splits) {
            if (!pinned_to(pinned.ep, ep) || !pinned_to(pinned.expert_tp, etp)) continue;
            for (int64_t mb : micro_batches) {
              if (mb < 1 || scenario.training.global_batch % (dp * mb) != 0) continue;
              std::vector<std::pair<PipelineSchedule, int64_t>> schedules;
              if (pp == 1) {
                // No pipeline: it runs as 1F1B, when that schedule is asked for.
                if (std::find(space.schedules.begin(), space.schedules.end(),
                              PipelineSchedule::kOneFOneB) != space.schedules.end()) {
                  schedules.emplace_back(PipelineSchedule::kOneFOneB, 1);
                }
              } else {
                for (PipelineSchedule s : space.schedules) {
                  if (s != PipelineSchedule::kInterleavedOneFOneB) {
                    schedules.emplace_back(s, 1);
                    continue;
                  }
                  const int64_t per_stage = ceil_div(layers, pp);
                  for (int64_t v = 2; v <= space.max_virtual_stages; ++v) {
                    if (per_stage % v == 0) schedules.emplace_back(s, v);
                  }
                }
              }
              // Without context parallelism the algorithm does nothing: the
              // scenario's stands for all of them.
              std::vector<strategies::ContextAlgorithm> contexts{scenario.plan.context};
              if (cp > 1) contexts = space.context_algorithms;
              for (const auto& [schedule, v] : schedules) {
                if (!pinned_to(pinned.virtual_stages, v)) continue;
                for (strategies::RecomputeMode rc : space.recompute) {
                  for (strategies::ContextAlgorithm context : contexts) {
                    for (int zero : space.zero) {
                      // Sharding over a single rank is the unsharded plan.
                      if (dp * cp == 1 && zero != 0) continue;
                      std::vector<int64_t> shard_groups{0};
                      if (zero == 3 && space.hsdp) {
                        for (int64_t sg : divisors(dp * cp)) {
                          if (sg > 1 && sg < dp * cp) shard_groups.push_back(sg);
                        }
                      }
                      for (int64_t sg : shard_groups) {
                        if (!pinned_to(pinned.shard_group, sg)) continue;
                        SweepCandidate c;
                        c.target = static_cast<uint32_t>(ti);
                        c.micro_batch = mb;
                        ParallelPlan& p = c.plan;
                        p = scenario.plan;
                        p.tp = tp;
                        p.cp = cp;
                        p.pp = pp;
                        p.dp = dp;
                        p.ep = ep;
                        p.expert_tp = etp;
                        // An explicit layout fits only its own chunk count.
                        if (static_cast<int64_t>(p.layout.size()) != pp * v) p.layout.clear();
                        p.sequence_parallel = sp && tp > 1;
                        p.zero = zero;
                        p.shard_group = sg;
                        p.schedule = schedule;
                        p.virtual_stages = v;
                        p.recompute = strategies::Recompute{rc, 0};
                        p.context = context;
                        strategies::Job job = job_of(scenario, p);
                        job.model = model;
                        job.training.micro_batch = mb;
                        // A plan whose schedule is too large to build (a million
                        // micro-batches) could only fail; it is not a candidate.
                        if (strategies::validate(job).empty() &&
                            !strategies::schedule_size_problem(
                                job, strategies::Scope::kRepresentatives)) {
                          out.push_back(c);
                        }
                      }
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  return out;
}

ScenarioSpec candidate_scenario(const ScenarioSpec& scenario, const SweepTarget& target,
                                const SweepCandidate& candidate) {
  ScenarioSpec spec = scenario;
  spec.cluster = target.cluster;
  spec.gpus = target.gpus;
  spec.plan = candidate.plan;
  spec.training.micro_batch = candidate.micro_batch;
  return spec;
}

std::vector<size_t> spread_order(size_t count, size_t block) {
  block = std::max<size_t>(1, block);
  const auto blocks =
      static_cast<size_t>(ceil_div(static_cast<int64_t>(count), static_cast<int64_t>(block)));
  size_t stride =
      std::max<size_t>(1, static_cast<size_t>(0.6180339887 * static_cast<double>(blocks)));
  while (std::gcd(stride, blocks) > 1) ++stride;
  std::vector<size_t> order;
  order.reserve(count);
  for (size_t b = 0; b < blocks; ++b) {
    const size_t first = b * stride % blocks * block;
    for (size_t i = first; i < std::min(count, first + block); ++i) order.push_back(i);
  }
  return order;
}

}  // namespace podsim::scenarios
