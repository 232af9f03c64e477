#include "scenarios/sweep/sweep.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "hwmodels/fabric.h"
#include "scenarios/run/run_model.h"
#include "scenarios/run/run_report.h"
#include "scenarios/run/run_sampler.h"
#include "scenarios/step/profile_fit.h"
#include "scenarios/step/simulate.h"
#include "scenarios/step/software.h"
#include "scenarios/sweep/bounds.h"
#include "scenarios/sweep/exchange.h"
#include "strategies/job.h"
#include "strategies/schedule.h"

namespace podsim::scenarios {
namespace {

using exchange::gather_all;
using exchange::get_outcome;
using exchange::get_screens;
using exchange::kEndMarker;
using exchange::put_outcome;
using exchange::put_screen;
using exchange::Reader;
using exchange::Writer;
using strategies::ParallelPlan;

PlanOutcome simulate_candidate(const ScenarioSpec& spec) {
  PlanOutcome o;
  try {
    // One representative per stage, whatever the scenario asks: the bounds
    // are built for this mode and an every-rank sweep would take hours.
    SimulateOptions options;
    options.mode = SimulationMode::kSymmetric;
    Result<Report> r = simulate(spec, options);
    if (!r.ok()) {
      o.error = r.problems().empty() ? std::string("simulation failed")
                                     : r.problems().front().to_string();
      return o;
    }
    const Report& report = r.value();
    o.fits = report.memory_fits;
    o.step_time_s = report.step_time_s;
    o.tokens_per_s = report.tokens_per_s;
    o.mfu = report.mfu;
    // Everything the GPU holds (the allocator's reserved memory and what
    // lives outside it), what fits and the headroom are measured against.
    o.memory_peak_bytes = report.memory_device_peak_bytes;
    o.memory_capacity_bytes = report.memory_capacity_bytes;
    o.exposed_comm_s = report.breakdown.exposed_comm.total();
    o.bubble_fraction = report.bubble_fraction;
  } catch (const std::exception& e) {
    // A schedule the engine cannot finish is a bug elsewhere; the sweep
    // reports the plan instead of stopping.
    o.error = e.what();
  }
  return o;
}

/// Runs `work(i, worker)` for i in [0, count) on `threads` workers (numbered
/// 0..threads-1) pulling from a shared counter.
template <typename Work>
void parallel_for(size_t count, unsigned threads, Work work) {
  if (count == 0) return;
  const auto n = static_cast<unsigned>(std::min<size_t>(threads, count));
  std::atomic<size_t> next{0};
  auto worker = [&](unsigned w) {
    for (size_t i = next++; i < count; i = next++) work(i, w);
  };
  if (n <= 1) {
    worker(0);
    return;
  }
  std::vector<std::thread> pool;
  pool.reserve(n);
  for (unsigned t = 0; t < n; ++t) pool.emplace_back(worker, t);
  for (std::thread& t : pool) t.join();
}

/// The K best times to train of one target so far (ascending).
class TopTimes {
 public:
  explicit TopTimes(size_t k) : k_(k) {}
  void add(double t) {
    if (k_ == 0) return;
    best_.insert(std::upper_bound(best_.begin(), best_.end(), t), t);
    if (best_.size() > k_) best_.pop_back();
  }
  size_t size() const { return best_.size(); }
  /// Whether K times are in: until then every plan may enter.
  bool full() const { return best_.size() >= k_; }
  /// A plan slower than this cannot enter the top K.
  double threshold() const {
    return best_.size() < k_ || k_ == 0 ? std::numeric_limits<double>::infinity() : best_.back();
  }

 private:
  size_t k_;
  std::vector<double> best_;
};

/// The time a sweep has left, counting down between estimates and taking a
/// new estimate only when it is lower (SweepProgressInfo::seconds_left).
class Countdown {
 public:
  /// -1 until the first estimate.
  double left(double now_s) const {
    return left_s_ < 0 ? -1.0 : std::max(0.0, left_s_ - (now_s - at_s_));
  }
  void estimate(double now_s, double seconds) {
    const double current = left(now_s);
    left_s_ = current < 0 ? seconds : std::min(current, seconds);
    at_s_ = now_s;
  }

 private:
  double left_s_ = -1, at_s_ = 0;
};

/// The bounds, or no information (nothing pruned or skipped) if computing
/// them throws: a bug elsewhere must not take the sweep down with it, and
/// no exception may leave a worker thread.
template <typename Compute>
PlanBounds::Bounds bounds_or_none(Compute compute) {
  try {
    return compute();
  } catch (const std::exception&) {
    return {};
  }
}

bool same_plan(const ParallelPlan& a, const ParallelPlan& b) {
  return a.dp == b.dp && a.tp == b.tp && a.pp == b.pp && a.cp == b.cp && a.ep == b.ep &&
         (a.sequence_parallel && a.tp > 1) == (b.sequence_parallel && b.tp > 1) &&
         a.zero == b.zero && a.shard_group == b.shard_group && a.schedule == b.schedule &&
         a.virtual_stages == b.virtual_stages && a.context == b.context &&
         a.recompute.mode == b.recompute.mode &&
         (a.recompute.mode != strategies::RecomputeMode::kEvery ||
          a.recompute.every_layers == b.recompute.every_layers) &&
         a.order == b.order;
}

}  // namespace

Result<SweepOutcome> run_sweep(const ScenarioSpec& scenario, std::vector<SweepTarget> targets,
                               const SweepOptions& options) {
  if (targets.empty()) {
    return std::vector<Problem>{{"/sweep", "no hardware targets to sweep", ""}};
  }
  if (options.partition_size > 1 && !options.exchange) {
    return std::vector<Problem>{{"/sweep", "a partitioned sweep needs an exchange", ""}};
  }
  if (options.partition_rank < 0 || options.partition_rank >= options.partition_size) {
    return std::vector<Problem>{{"/sweep", "partition rank out of range", ""}};
  }
  std::vector<Problem> problems;
  for (size_t t = 0; t < targets.size(); ++t) {
    hwmodels::FabricOptions fabric;  // a target's plans use its first `gpus` GPUs
    fabric.gpus = targets[t].gpus;
    for (const hwmodels::SpecProblem& p : hwmodels::Fabric::validate(targets[t].cluster, fabric)) {
      problems.push_back(
          {"/sweep/targets/" + std::to_string(t) + "/cluster/" + p.path, p.message, p.hint});
    }
  }
  if (!problems.empty()) return problems;
  // The hardware each target's plans are simulated on (a calibration profile
  // of the scenario's GPU applies to targets that keep that GPU).
  std::vector<CalibratedHardware> hardware;
  for (const SweepTarget& t : targets) {
    ScenarioSpec on_target = scenario;
    on_target.cluster = t.cluster;
    on_target.gpus = t.gpus;
    Result<CalibratedHardware> h = calibrated_hardware(on_target, "");
    if (!h.ok()) return h.problems();
    hardware.push_back(std::move(h.value()));
  }
  SweepOutcome out;
  out.targets = std::move(targets);
  out.candidates = enumerate_plans(scenario, out.targets, options.space);
  if (out.candidates.empty()) {
    // No plan is left when the batch alone makes every schedule too large to
    // build: that is the scenario's problem, not an empty ranking.
    const strategies::Job job = job_of(scenario);
    if (const auto too_large =
            strategies::schedule_size_problem(job, strategies::Scope::kRepresentatives)) {
      return std::vector<Problem>{{too_large->path, too_large->message, too_large->hint}};
    }
  }
  out.plans_total = out.candidates.size();
  out.tokens = options.tokens;
  out.top_k = options.top_k;
  out.min_headroom = options.min_headroom;
  // What a plan may take of each target's GPU with --min-headroom free: a
  // memory bound above it rules the plan out like one above the capacity.
  std::vector<double> usable_bytes;
  for (const SweepTarget& t : out.targets) {
    const double capacity = t.cluster.gpu.hbm_capacity_bytes;
    usable_bytes.push_back(capacity - options.min_headroom.required_bytes(capacity));
  }
  auto below_headroom = [&](uint32_t target, double peak_bytes) {
    return peak_bytes > usable_bytes[target];
  };
  const size_t n = out.candidates.size();
  const unsigned threads =
      options.jobs > 0 ? options.jobs : std::max(1u, std::thread::hardware_concurrency());
  const auto rank = static_cast<size_t>(options.partition_rank);
  const auto size = static_cast<size_t>(options.partition_size);

  const auto started = std::chrono::steady_clock::now();
  auto seconds_since_start = [&]() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  };
  Countdown countdown;
  std::mutex progress_mutex;
  uint64_t done = 0;
  // Simulations of the round under way: out.plans_simulated counts them
  // only once the round is accounted for.
  uint64_t simulated_this_round = 0;
  // This process's share of the screening (quick bounds for every plan).
  std::vector<size_t> to_screen;
  for (size_t i = rank; i < n; i += size) to_screen.push_back(i);
  uint64_t screened = 0;
  auto progress_info = [&]() {
    SweepProgressInfo info{done, out.plans_total, out.plans_simulated + simulated_this_round,
                           countdown.left(seconds_since_start())};
    info.screened = screened;
    info.to_screen = to_screen.size();
    return info;
  };
  auto report_progress = [&](uint64_t finished, uint64_t simulations = 0) {
    if (!options.progress || finished == 0) return;
    std::lock_guard<std::mutex> lock(progress_mutex);
    done += finished;
    simulated_this_round += simulations;
    options.progress(progress_info());
  };
  // The screening starts with the clock: its time left is the plans left at
  // the seconds per plan so far, every worker included.
  auto report_screened = [&](bool pruned) {
    if (!options.progress) return;
    std::lock_guard<std::mutex> lock(progress_mutex);
    done += pruned ? 1 : 0;
    ++screened;
    SweepProgressInfo info = progress_info();
    if (info.screening()) {
      info.screening_seconds_left = seconds_since_start() / static_cast<double>(screened) *
                                    static_cast<double>(to_screen.size() - screened);
    }
    options.progress(info);
  };
  // Seconds this process's workers spent refining and simulating, and how
  // many they did: what the progress estimate prices the rest at.
  struct WorkerTime {
    double refine_s = 0, simulate_s = 0;
    uint64_t refined = 0, simulated = 0;
  };
  std::vector<WorkerTime> worker_time(threads);
  // Bounds: one set of hardware models and cost cache per worker and target.
  const hwmodels::KernelImplementation software = kernel_implementation(scenario);
  std::vector<std::vector<std::unique_ptr<PlanBounds>>> bounders(threads);
  for (auto& b : bounders) b.resize(out.targets.size());
  auto bounder = [&](unsigned worker, uint32_t target) -> PlanBounds& {
    std::unique_ptr<PlanBounds>& b = bounders[worker][target];
    if (!b) b = std::make_unique<PlanBounds>(hardware[target], software);
    return *b;
  };
  auto candidate_job = [&](const SweepCandidate& c) {
    strategies::Job job = job_of(scenario, c.plan);
    job.training.micro_batch = c.micro_batch;
    return job;
  };
  // ---- Quick bounds for every plan (this process's share). ----------------
  out.screens.assign(n, PlanScreen{});
  {
    // Visited in blocks of consecutive plans taken in a spread order, not in
    // the canonical order: the cost of a bound changes along the canonical
    // order (the DeepSeek-V3 sweep's screening slowed as it went), so the
    // rate so far, and the time left it gives, ran short for most of it.
    // Whole blocks keep neighbouring plans, which share cached segment
    // prices, together (plan by plan the DeepSeek-V3 sweep took 1.5x the
    // CPU). A plan's bounds do not depend on the plans bounded before it
    // (SweepBounds.APlansBoundsDoNotDependOnThePlansBoundedBefore).
    const std::vector<size_t> order = spread_order(to_screen.size(), 4096);
    parallel_for(order.size(), threads, [&](size_t j, unsigned worker) {
      const size_t i = to_screen[order[j]];
      const SweepCandidate& c = out.candidates[i];
      const PlanBounds::Bounds b =
          bounds_or_none([&]() { return bounder(worker, c.target).quick(candidate_job(c)); });
      PlanScreen& s = out.screens[i];
      s.memory_lower_bound_bytes = b.memory_bytes;
      s.pruned_memory = !b.can_fit || below_headroom(c.target, b.memory_bytes);
      s.step_lower_bound_s = b.step_s;
      report_screened(s.pruned_memory);
    });
    Writer w;
    for (size_t i : to_screen) put_screen(w, i, out.screens[i]);
    for (const std::string& bytes : gather_all(options, w.take())) {
      Reader r(bytes);
      get_screens(r, out.screens);
    }
  }
  uint64_t pruned_quick = 0;
  for (const PlanScreen& s : out.screens) pruned_quick += s.pruned_memory ? 1 : 0;
  out.plans_pruned_memory = pruned_quick;

  // ---- The scenario's own plan, when its hardware is among the targets. ---
  // The simulated plans' outcomes, by candidate index: some hundreds of
  // plans out of up to millions, so not a slot for each (that was 170 MB
  // for the DeepSeek-V3 recipe sweep's 1.77M).
  std::unordered_map<size_t, PlanOutcome> outcomes;
  std::vector<uint8_t> simulated(n, 0);
  // A scenario whose own plan is invalid (read with plan_problems_as_warnings)
  // has no baseline: the other plans are swept all the same.
  for (size_t ti = 0; ti < out.targets.size() && scenario.plan_problems.empty(); ++ti) {
    const SweepTarget& t = out.targets[ti];
    if (t.gpus != scenario.gpus || t.gpu != scenario.cluster.gpu.name) continue;
    SweepOutcome::Baseline b;
    b.target = static_cast<uint32_t>(ti);
    b.candidate.target = b.target;
    b.candidate.plan = scenario.plan;
    b.candidate.micro_batch = scenario.training.micro_batch;
    // Its simulation is the first measure of what one costs: the rounds'
    // time left is known from the end of the first round, which only refines.
    const auto simulation_started = std::chrono::steady_clock::now();
    b.outcome = simulate_candidate(candidate_scenario(scenario, t, b.candidate));
    worker_time[0].simulate_s +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - simulation_started)
            .count();
    ++worker_time[0].simulated;
    for (size_t i = 0; i < n; ++i) {
      const SweepCandidate& c = out.candidates[i];
      if (c.target == b.target && c.micro_batch == b.candidate.micro_batch &&
          same_plan(c.plan, b.candidate.plan)) {
        b.index = i;
        if (!out.screens[i].pruned_memory) {
          outcomes[i] = b.outcome;
          simulated[i] = 1;
        }
        break;
      }
    }
    out.baseline = std::move(b);
    break;
  }

  // Plans are ranked by their expected time to train (scenarios/run/): the
  // steps plus what the job's failures, saves and restarts add. Within a
  // target that grows with the step time, and no plan can beat the bound of
  // train_time_bound, so skipping by it keeps the top K.
  std::vector<TrainTimeBound> bounds;
  for (const SweepTarget& t : out.targets) {
    bounds.push_back(
        train_time_bound(candidate_scenario(scenario, t, SweepCandidate{}), options.tokens));
  }
  auto train_time_s = [&](const SweepCandidate& c, double step_time_s) {
    const ScenarioSpec spec = candidate_scenario(scenario, out.targets[c.target], c);
    return expected_wall_s(run_model(spec, options.tokens, step_time_s, step_time_s).inputs);
  };
  auto train_time_bound_s = [&](size_t i) {
    return bounds[out.candidates[i].target].at(out.screens[i].step_lower_bound_s);
  };
  std::vector<double> train_times(n, 0.0);
  std::optional<double> baseline_train_time;
  if (out.baseline && out.baseline->outcome.error.empty()) {
    baseline_train_time = train_time_s(out.baseline->candidate, out.baseline->outcome.step_time_s);
  }
  std::vector<TopTimes> top(out.targets.size(), TopTimes(options.top_k));
  auto threshold = [&](uint32_t target) {
    double t = top[target].threshold();
    if (options.exact_baseline_rank && baseline_train_time && out.baseline->target == target) {
      t = std::max(t, *baseline_train_time);
    }
    return t;
  };
  auto account = [&](size_t i) {
    // An outcome another process's bytes did not carry counts as a plan that
    // does not fit (the default), not as a reason to stop.
    const PlanOutcome& o = outcomes[i];
    ++out.plans_simulated;
    if (!o.error.empty()) {
      ++out.plans_failed;
      if (out.failures.size() < 5) out.failures.push_back(o.error);
    } else if (!o.fits) {
      ++out.plans_not_fitting;
    } else if (below_headroom(out.candidates[i].target, o.memory_peak_bytes)) {
      ++out.plans_below_headroom;
    } else {
      train_times[i] = train_time_s(out.candidates[i], o.step_time_s);
      top[out.candidates[i].target].add(train_times[i]);
    }
  };
  for (size_t i = 0; i < n; ++i) {
    if (simulated[i] != 0) {
      account(i);
      report_progress(1);
    }
  }

  // ---- Rounds, smallest bound first. --------------------------------------
  // The queue orders by (bound, candidate index); without bounds every plan
  // has bound 0, i.e. canonical order.
  using Entry = std::pair<double, size_t>;
  std::set<Entry> queue;
  auto key = [&](size_t i) { return options.use_bounds ? out.screens[i].step_lower_bound_s : 0.0; };
  for (size_t i = 0; i < n; ++i) {
    if (!out.screens[i].pruned_memory && simulated[i] == 0) queue.emplace(key(i), i);
  }
  // The work left, priced at what refining and simulating have cost so far:
  // queued plans whose bound does not rule them out, refined ones to be
  // simulated, the others refined and then simulated as often as refined
  // plans have been so far. Spread over every worker of every process.
  uint64_t refined_total = 0;
  auto seconds_left = [&](const std::set<std::pair<double, size_t>>& queued,
                          uint64_t refined_so_far) {
    WorkerTime spent;
    for (const WorkerTime& w : worker_time) {
      spent.refine_s += w.refine_s;
      spent.simulate_s += w.simulate_s;
      spent.refined += w.refined;
      spent.simulated += w.simulated;
    }
    if (spent.simulated == 0) return -1.0;
    // Until K plans of a target are in, its threshold is infinite; expect it
    // at the K-th smallest bound of the plans left, times the largest ratio
    // of a simulated plan's time to its bound so far (bounds are lower
    // bounds: the ratio is >= 1, and the larger one errs on the long side,
    // which the countdown corrects; an estimate too short it keeps). No
    // ratio before a simulated plan has fitted: no estimate either (with
    // the ratio taken as 1 the DeepSeek-V3 recipe sweep, whose own plan does
    // not fit, said 0:00 left for the 25 s it then spent refining).
    double ratio = 0;
    for (size_t i = 0; i < n; ++i) {
      if (train_times[i] > 0) ratio = std::max(ratio, train_times[i] / train_time_bound_s(i));
    }
    const bool waiting_for_k =
        std::any_of(top.begin(), top.end(), [](const TopTimes& t) { return !t.full(); });
    if (ratio == 0 && waiting_for_k) return -1.0;
    ratio = std::max(ratio, 1.0);
    std::vector<double> expected(out.targets.size());
    std::vector<size_t> still_in(out.targets.size(), 0);
    for (size_t t = 0; t < out.targets.size(); ++t) {
      expected[t] = threshold(static_cast<uint32_t>(t));
      still_in[t] = top[t].full() ? 0 : options.top_k - top[t].size();
    }
    for (const auto& entry : queued) {  // bound order, which is training-time order per target
      const uint32_t t = out.candidates[entry.second].target;
      if (still_in[t] > 0 && --still_in[t] == 0) {
        expected[t] = ratio * train_time_bound_s(entry.second);
      }
    }
    double to_simulate = 0, to_refine = 0;
    for (const auto& entry : queued) {
      const size_t i = entry.second;
      // As the rounds skip them: by the bound on the training time, not the step's.
      if (options.use_bounds && train_time_bound_s(i) > expected[out.candidates[i].target]) {
        continue;
      }
      (out.screens[i].refined ? to_simulate : to_refine) += 1;
    }
    const double simulate_s = spent.simulate_s / static_cast<double>(spent.simulated);
    const double refine_s =
        spent.refined > 0 ? spent.refine_s / static_cast<double>(spent.refined) : 0.0;
    const double simulated_share = refined_so_far > 0
                                       ? std::min(1.0, static_cast<double>(out.plans_simulated) /
                                                           static_cast<double>(refined_so_far))
                                       : 1.0;
    const double work =
        to_simulate * simulate_s + to_refine * (refine_s + simulated_share * simulate_s);
    return work / static_cast<double>(threads * size);
  };
  const size_t max_simulate = std::max<size_t>(1, options.simulate_per_round);
  const size_t max_refine = std::max<size_t>(1, options.refine_per_round);
  while (!queue.empty()) {
    std::vector<size_t> to_refine, to_simulate;
    uint64_t skipped = 0;
    while (!queue.empty() && to_refine.size() < max_refine && to_simulate.size() < max_simulate) {
      const size_t i = queue.begin()->second;
      queue.erase(queue.begin());
      if (options.use_bounds && train_time_bound_s(i) > threshold(out.candidates[i].target)) {
        ++skipped;
        continue;
      }
      (out.screens[i].refined ? to_simulate : to_refine).push_back(i);
    }
    out.plans_skipped_by_bound += skipped;
    report_progress(skipped);
    // Work items: refinements first (cheap), then simulations; item k goes
    // to process k mod size.
    std::vector<size_t> items = to_refine;
    items.insert(items.end(), to_simulate.begin(), to_simulate.end());
    std::vector<size_t> mine;
    for (size_t k = rank; k < items.size(); k += size) mine.push_back(k);
    std::vector<PlanOutcome> simulated_now(items.size());  // by item; the workers' own slots
    parallel_for(mine.size(), threads, [&](size_t j, unsigned worker) {
      const size_t k = mine[j];
      const size_t i = items[k];
      const SweepCandidate& c = out.candidates[i];
      const auto item_started = std::chrono::steady_clock::now();
      WorkerTime& spent = worker_time[worker];
      auto item_seconds = [&]() {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - item_started)
            .count();
      };
      if (k < to_refine.size()) {
        const PlanBounds::Bounds b =
            bounds_or_none([&]() { return bounder(worker, c.target).refined(candidate_job(c)); });
        spent.refine_s += item_seconds();
        ++spent.refined;
        PlanScreen& s = out.screens[i];
        s.refined = true;
        s.memory_lower_bound_bytes = std::max(s.memory_lower_bound_bytes, b.memory_bytes);
        s.pruned_memory = !b.can_fit || below_headroom(c.target, s.memory_lower_bound_bytes);
        s.step_lower_bound_s = std::max(s.step_lower_bound_s, b.step_s);
        if (s.pruned_memory) report_progress(1);
        return;
      }
      simulated_now[k] = simulate_candidate(candidate_scenario(scenario, out.targets[c.target], c));
      spent.simulate_s += item_seconds();
      ++spent.simulated;
      report_progress(1, 1);
    });
    for (size_t k : mine) {
      if (k >= to_refine.size()) outcomes[items[k]] = std::move(simulated_now[k]);
    }
    if (size > 1) {
      Writer w;
      for (size_t k : mine) {
        if (k >= to_refine.size()) continue;
        put_screen(w, items[k], out.screens[items[k]]);
      }
      w.put<uint64_t>(kEndMarker);
      for (size_t k : mine) {
        if (k < to_refine.size()) continue;
        w.put<uint64_t>(items[k]);
        put_outcome(w, outcomes.at(items[k]));
      }
      for (const std::string& bytes : options.exchange(w.take())) {
        Reader r(bytes);
        get_screens(r, out.screens);
        while (!r.done() && r.ok()) {
          const auto i = r.get<uint64_t>();
          PlanOutcome o = get_outcome(r);
          if (r.ok() && i < n) outcomes[i] = std::move(o);
        }
      }
    }
    for (size_t i : to_refine) {
      if (out.screens[i].pruned_memory) {
        ++out.plans_pruned_memory;
      } else {
        queue.emplace(key(i), i);
      }
    }
    for (size_t i : to_simulate) {
      simulated[i] = 1;
      account(i);
    }
    simulated_this_round = 0;
    refined_total += to_refine.size();
    if (options.progress) {
      const double estimate = seconds_left(queue, refined_total);
      if (estimate >= 0) countdown.estimate(seconds_since_start(), estimate);
    }
  }

  // ---- Ranking, cost, Pareto front, the baseline's place. ----------------
  for (size_t i = 0; i < n; ++i) {
    if (simulated[i] == 0) continue;
    const PlanOutcome& outcome = outcomes.at(i);
    if (!outcome.fits || !outcome.error.empty() ||
        below_headroom(out.candidates[i].target, outcome.memory_peak_bytes)) {
      continue;
    }
    const SweepTarget& t = out.targets[out.candidates[i].target];
    RankedPlan r;
    r.index = i;
    r.outcome = outcome;
    r.step_lower_bound_s = out.screens[i].step_lower_bound_s;
    r.train_time_s = train_times[i];
    r.failure_free_time_s =
        r.outcome.tokens_per_s > 0 ? options.tokens / r.outcome.tokens_per_s : 0.0;
    r.gpu_hours = r.train_time_s / 3600.0 * static_cast<double>(t.gpus);
    if (t.price_per_gpu_hour) r.cost_usd = r.gpu_hours * *t.price_per_gpu_hour;
    out.ranked.push_back(std::move(r));
  }
  std::sort(out.ranked.begin(), out.ranked.end(), [](const RankedPlan& a, const RankedPlan& b) {
    if (a.train_time_s != b.train_time_s) return a.train_time_s < b.train_time_s;
    return a.index < b.index;
  });
  collapse_identical_plans(scenario, out);
  for (size_t k = 0; k < out.ranked.size() && k < options.top_k; ++k) {
    RankedPlan& r = out.ranked[k];
    const SweepCandidate& c = out.candidates[r.index];
    const ScenarioSpec spec = candidate_scenario(scenario, out.targets[c.target], c);
    r.run =
        sample_runs(run_model(spec, options.tokens, r.outcome.step_time_s, r.outcome.step_time_s),
                    scenario.run.samples, scenario.run.seed);
  }
  out.cost_in_dollars = std::all_of(out.ranked.begin(), out.ranked.end(),
                                    [](const RankedPlan& r) { return r.cost_usd.has_value(); });
  double cheapest = std::numeric_limits<double>::infinity();
  for (size_t k = 0; k < out.ranked.size(); ++k) {
    const RankedPlan& r = out.ranked[k];
    const double cost = out.cost_in_dollars ? *r.cost_usd : r.gpu_hours;
    if (cost < cheapest) {
      cheapest = cost;
      out.pareto.push_back(k);
    }
  }
  if (baseline_train_time) {
    // Ahead of the baseline: the simulated plans that beat it (ties go to
    // the canonical order, a baseline outside the space last), and at most
    // every skipped plan whose bound does not rule that out.
    SweepOutcome::Baseline& b = *out.baseline;
    const double time = *baseline_train_time;
    uint64_t ahead = 0, ahead_in_target = 0, maybe = 0;
    for (const RankedPlan& r : out.ranked) {
      if (b.index && r.index == *b.index) continue;
      const bool before =
          r.train_time_s < time || (r.train_time_s == time && (!b.index || r.index < *b.index));
      ahead += before ? 1 : 0;
      ahead_in_target += before && out.candidates[r.index].target == b.target ? 1 : 0;
    }
    for (size_t i = 0; i < n; ++i) {
      if (simulated[i] == 0 && !out.screens[i].pruned_memory && train_time_bound_s(i) <= time) {
        ++maybe;
      }
    }
    b.rank = ahead + 1;
    b.rank_worst = ahead + maybe + 1;
    b.rank_in_target = ahead_in_target + 1;
  }
  return out;
}

}  // namespace podsim::scenarios
