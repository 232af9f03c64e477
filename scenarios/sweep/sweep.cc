#include "scenarios/sweep/sweep.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "hwmodels/fabric.h"
#include "scenarios/input/presets.h"
#include "scenarios/input/reader.h"
#include "scenarios/step/profile_fit.h"
#include "scenarios/step/simulate.h"
#include "scenarios/sweep/bounds.h"
#include "scenarios/sweep/hardware_facts.h"
#include "strategies/job.h"

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

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Ends a list of screens in an exchanged byte string.
constexpr uint64_t kEndMarker = std::numeric_limits<uint64_t>::max();

// ---- Byte strings for the exchange between processes ----------------------
//
// Fixed-width little-endian-as-stored values: every process runs the same
// binary, so the bytes read back are the values written.

class Writer {
 public:
  template <typename T>
  void put(T value) {
    out_.append(reinterpret_cast<const char*>(&value), sizeof value);
  }
  void put_string(const std::string& s) {
    put<uint64_t>(s.size());
    out_ += s;
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(const std::string& in) : in_(in) {}
  template <typename T>
  T get() {
    T value{};
    if (pos_ + sizeof value > in_.size()) {
      ok_ = false;
      return value;
    }
    std::memcpy(&value, in_.data() + pos_, sizeof value);
    pos_ += sizeof value;
    return value;
  }
  std::string get_string() {
    const auto n = get<uint64_t>();
    if (!ok_ || pos_ + n > in_.size()) {
      ok_ = false;
      return {};
    }
    std::string s = in_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  bool done() const { return pos_ >= in_.size(); }
  bool ok() const { return ok_; }

 private:
  const std::string& in_;
  size_t pos_ = 0;
  bool ok_ = true;
};

void put_outcome(Writer& w, const PlanOutcome& o) {
  w.put<uint8_t>(o.fits ? 1 : 0);
  for (double v : {o.step_time_s, o.tokens_per_s, o.mfu, o.memory_peak_bytes,
                   o.memory_capacity_bytes, o.exposed_comm_s, o.bubble_fraction}) {
    w.put(v);
  }
  w.put_string(o.error);
}

PlanOutcome get_outcome(Reader& r) {
  PlanOutcome o;
  o.fits = r.get<uint8_t>() != 0;
  for (double* v : {&o.step_time_s, &o.tokens_per_s, &o.mfu, &o.memory_peak_bytes,
                    &o.memory_capacity_bytes, &o.exposed_comm_s, &o.bubble_fraction}) {
    *v = r.get<double>();
  }
  o.error = r.get_string();
  return o;
}

/// All processes' byte strings, or just ours in a single process.
std::vector<std::string> gather_all(const SweepOptions& options, const std::string& mine) {
  if (options.partition_size <= 1) return {mine};
  return options.exchange(mine);
}

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
    o.memory_peak_bytes = report.memory_peak_bytes;
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

/// The K best step times of one target so far (ascending).
class TopTimes {
 public:
  explicit TopTimes(size_t k) : k_(k) {}
  void add(double t) {
    if (k_ == 0) return;
    best_.insert(std::upper_bound(best_.begin(), best_.end(), t), t);
    if (best_.size() > k_) best_.pop_back();
  }
  /// A plan slower than this cannot enter the top K.
  double threshold() const {
    return best_.size() < k_ || k_ == 0 ? std::numeric_limits<double>::infinity() : best_.back();
  }

 private:
  size_t k_;
  std::vector<double> best_;
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

Result<SweepGpu> sweep_gpu_preset(const std::string& name) {
  // Any cluster preset carries the GPU key; only the GPU is kept.
  const std::vector<std::string> clusters = builtin_presets().names("clusters");
  if (clusters.empty()) {
    return std::vector<Problem>{{"/sweep/gpu", "no cluster presets are built in", ""}};
  }
  Result<hwmodels::ClusterSpec> c =
      read_cluster_json(nlohmann::json{{"base", clusters.front()}, {"gpu", name}});
  if (!c.ok()) {
    std::vector<Problem> problems = c.problems();
    for (Problem& p : problems) {
      if (p.path.rfind("/cluster/gpu", 0) == 0) p.path = "/sweep/gpu-types" + p.path.substr(12);
    }
    return problems;
  }
  return SweepGpu{name, c.value().gpu};
}

Result<SweepTarget> make_sweep_target(const ScenarioSpec& scenario, int64_t gpus,
                                      const std::optional<SweepGpu>& gpu) {
  const hwmodels::ClusterSpec& base = scenario.cluster;
  if (gpus < 1) {
    return std::vector<Problem>{
        {"/sweep/gpus", "GPU count must be at least 1, got " + std::to_string(gpus), ""}};
  }
  if (base.gpus_per_node < 1) {
    return std::vector<Problem>{{"/cluster/gpus_per_node", "must be at least 1", ""}};
  }
  if (gpus > base.gpus_per_node && gpus % base.gpus_per_node != 0) {
    return std::vector<Problem>{{"/sweep/gpus",
                                 std::to_string(gpus) + " GPUs is not a whole number of " +
                                     std::to_string(base.gpus_per_node) + "-GPU nodes",
                                 "use a multiple of gpus_per_node"}};
  }
  SweepTarget t;
  t.gpus = gpus;
  t.cluster = base;
  t.cluster.nodes = static_cast<int>(ceil_div(gpus, base.gpus_per_node));
  t.gpu = base.gpu.name;
  std::string note;
  const bool swapped = gpu.has_value() && gpu->name != base.gpu.name;
  if (swapped) {
    t.gpu = gpu->name;
    t.cluster.gpu = gpu->spec;
    note = gpu->name + " GPUs in the scenario's cluster (network, tiers and latencies kept";
    if (const std::optional<ScaleUpFacts> link = scale_up_facts(gpu->name)) {
      t.cluster.scale_up.bw_bytes_per_s = link->bw_bytes_per_s;
      t.cluster.scale_up.efficiency = link->efficiency;
      note += "; scale-up link from " + link->source;
    } else {
      note += "; scale-up link kept: no data for this GPU's own";
    }
    note += std::string("; NVLS ") + (gpu->spec.has_nvls ? "on" : "off") + " from the GPU preset)";
  }
  if (base.price_per_gpu_hour && !swapped) {
    t.price_per_gpu_hour = base.price_per_gpu_hour;
    t.price_source = "the scenario's cluster price_per_gpu_hour";
  } else if (const std::optional<GpuPrice> price = reference_price(t.gpu)) {
    t.price_per_gpu_hour = price->usd_per_gpu_hour;
    t.price_source = price->source;
  } else {
    t.price_source = "no price known for " + t.gpu + " (set cluster.price_per_gpu_hour)";
  }
  t.note = std::move(note);
  return t;
}

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

  for (size_t ti = 0; ti < targets.size(); ++ti) {
    const SweepTarget& target = targets[ti];
    const int64_t g = target.gpus;
    const int64_t domain = target.cluster.scale_up.domain > 0 ? target.cluster.scale_up.domain
                                                              : target.cluster.gpus_per_node;
    const int64_t max_tp = space.max_tp > 0 ? space.max_tp : std::max<int64_t>(1, domain);
    const int64_t max_cp =
        space.max_cp > 0 ? space.max_cp : std::max<int64_t>(1, scenario.training.seq_len / 1024);
    const int64_t max_pp = space.max_pp > 0 ? space.max_pp : layers;
    for (int64_t tp : divisors(g)) {
      if (tp > max_tp || !allowed(tp)) continue;
      for (int64_t cp : divisors(g / tp)) {
        if (cp > max_cp || !allowed(cp)) continue;
        for (int64_t pp : divisors(g / tp / cp)) {
          if (pp > max_pp || !allowed(pp)) continue;
          const int64_t dp = g / tp / cp / pp;
          std::vector<int64_t> eps{1};
          if (moe) {
            eps.clear();
            for (int64_t ep : divisors(model.moe->experts)) {
              if ((dp * cp) % ep == 0 && allowed(ep)) eps.push_back(ep);
            }
          }
          for (int64_t ep : eps) {
            for (int64_t mb : micro_batches) {
              if (mb < 1 || scenario.training.global_batch % (dp * mb) != 0) continue;
              std::vector<std::pair<PipelineSchedule, int64_t>> schedules;
              if (pp == 1) {
                schedules.emplace_back(PipelineSchedule::kOneFOneB, 1);
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
              for (const auto& [schedule, v] : schedules) {
                for (strategies::RecomputeMode rc : space.recompute) {
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
                      p.sequence_parallel = sp && tp > 1;
                      p.zero = zero;
                      p.shard_group = sg;
                      p.schedule = schedule;
                      p.virtual_stages = v;
                      p.recompute = strategies::Recompute{rc, 0};
                      strategies::Job job{model, scenario.training, p, scenario.options};
                      job.training.micro_batch = mb;
                      if (strategies::validate(job).empty()) out.push_back(c);
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
    for (const hwmodels::SpecProblem& p : hwmodels::Fabric::validate(targets[t].cluster)) {
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
  out.plans_total = out.candidates.size();
  out.tokens = options.tokens;
  out.top_k = options.top_k;
  const size_t n = out.candidates.size();
  const unsigned threads =
      options.jobs > 0 ? options.jobs : std::max(1u, std::thread::hardware_concurrency());
  const auto rank = static_cast<size_t>(options.partition_rank);
  const auto size = static_cast<size_t>(options.partition_size);

  std::mutex progress_mutex;
  uint64_t done = 0;
  auto report_progress = [&](uint64_t finished) {
    if (!options.progress || finished == 0) return;
    std::lock_guard<std::mutex> lock(progress_mutex);
    done += finished;
    options.progress(done, out.plans_total);
  };
  // Bounds: one set of hardware models and cost cache per worker and target.
  std::vector<std::vector<std::unique_ptr<PlanBounds>>> bounders(threads);
  for (auto& b : bounders) b.resize(out.targets.size());
  auto bounder = [&](unsigned worker, uint32_t target) -> PlanBounds& {
    std::unique_ptr<PlanBounds>& b = bounders[worker][target];
    if (!b) b = std::make_unique<PlanBounds>(hardware[target]);
    return *b;
  };
  auto job_of = [&](const SweepCandidate& c) {
    strategies::Job job{scenario.model, scenario.training, c.plan, scenario.options};
    job.training.micro_batch = c.micro_batch;
    return job;
  };
  auto put_screen = [&](Writer& w, size_t i) {
    const PlanScreen& s = out.screens[i];
    w.put<uint64_t>(i);
    w.put<uint8_t>(static_cast<uint8_t>((s.pruned_memory ? 1 : 0) | (s.refined ? 2 : 0)));
    w.put(s.memory_lower_bound_bytes);
    w.put(s.step_lower_bound_s);
  };
  // Reads screens until the end of `r` or an end marker.
  auto get_screens = [&](Reader& r) {
    while (!r.done() && r.ok()) {
      const auto i = r.get<uint64_t>();
      if (i == kEndMarker) break;
      PlanScreen s;
      const auto flags = r.get<uint8_t>();
      s.pruned_memory = (flags & 1) != 0;
      s.refined = (flags & 2) != 0;
      s.memory_lower_bound_bytes = r.get<double>();
      s.step_lower_bound_s = r.get<double>();
      if (r.ok() && i < n) out.screens[i] = s;
    }
  };

  // ---- Quick bounds for every plan (this process's share). ----------------
  out.screens.assign(n, PlanScreen{});
  {
    std::vector<size_t> mine;
    for (size_t i = rank; i < n; i += size) mine.push_back(i);
    parallel_for(mine.size(), threads, [&](size_t j, unsigned worker) {
      const size_t i = mine[j];
      const SweepCandidate& c = out.candidates[i];
      const PlanBounds::Bounds b =
          bounds_or_none([&]() { return bounder(worker, c.target).quick(job_of(c)); });
      PlanScreen& s = out.screens[i];
      s.memory_lower_bound_bytes = b.memory_bytes;
      s.pruned_memory = !b.can_fit;
      s.step_lower_bound_s = b.step_s;
      if (s.pruned_memory) report_progress(1);
    });
    Writer w;
    for (size_t i : mine) put_screen(w, i);
    for (const std::string& bytes : gather_all(options, w.take())) {
      Reader r(bytes);
      get_screens(r);
    }
  }
  uint64_t pruned_quick = 0;
  for (const PlanScreen& s : out.screens) pruned_quick += s.pruned_memory ? 1 : 0;
  out.plans_pruned_memory = pruned_quick;

  // ---- The scenario's own plan, when its hardware is among the targets. ---
  std::vector<PlanOutcome> outcomes(n);
  std::vector<uint8_t> simulated(n, 0);
  for (size_t ti = 0; ti < out.targets.size(); ++ti) {
    const SweepTarget& t = out.targets[ti];
    if (t.gpus != scenario.gpus || t.gpu != scenario.cluster.gpu.name) continue;
    SweepOutcome::Baseline b;
    b.target = static_cast<uint32_t>(ti);
    b.candidate.target = b.target;
    b.candidate.plan = scenario.plan;
    b.candidate.micro_batch = scenario.training.micro_batch;
    b.outcome = simulate_candidate(candidate_scenario(scenario, t, b.candidate));
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

  std::vector<TopTimes> top(out.targets.size(), TopTimes(options.top_k));
  auto threshold = [&](uint32_t target) {
    double t = top[target].threshold();
    if (options.exact_baseline_rank && out.baseline && out.baseline->target == target &&
        out.baseline->outcome.error.empty()) {
      t = std::max(t, out.baseline->outcome.step_time_s);
    }
    return t;
  };
  auto account = [&](size_t i) {
    const PlanOutcome& o = outcomes[i];
    ++out.plans_simulated;
    if (!o.error.empty()) {
      ++out.plans_failed;
      if (out.failures.size() < 5) out.failures.push_back(o.error);
    } else if (!o.fits) {
      ++out.plans_not_fitting;
    } else {
      top[out.candidates[i].target].add(o.step_time_s);
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
  const size_t max_simulate = std::max<size_t>(1, options.simulate_per_round);
  const size_t max_refine = std::max<size_t>(1, options.refine_per_round);
  while (!queue.empty()) {
    std::vector<size_t> to_refine, to_simulate;
    uint64_t skipped = 0;
    while (!queue.empty() && to_refine.size() < max_refine && to_simulate.size() < max_simulate) {
      const size_t i = queue.begin()->second;
      queue.erase(queue.begin());
      if (options.use_bounds &&
          out.screens[i].step_lower_bound_s > threshold(out.candidates[i].target)) {
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
    parallel_for(mine.size(), threads, [&](size_t j, unsigned worker) {
      const size_t k = mine[j];
      const size_t i = items[k];
      const SweepCandidate& c = out.candidates[i];
      if (k < to_refine.size()) {
        const PlanBounds::Bounds b =
            bounds_or_none([&]() { return bounder(worker, c.target).refined(job_of(c)); });
        PlanScreen& s = out.screens[i];
        s.refined = true;
        s.memory_lower_bound_bytes = std::max(s.memory_lower_bound_bytes, b.memory_bytes);
        s.pruned_memory = !b.can_fit;
        s.step_lower_bound_s = std::max(s.step_lower_bound_s, b.step_s);
        if (s.pruned_memory) report_progress(1);
        return;
      }
      outcomes[i] = simulate_candidate(candidate_scenario(scenario, out.targets[c.target], c));
      report_progress(1);
    });
    if (size > 1) {
      Writer w;
      for (size_t k : mine) {
        if (k >= to_refine.size()) continue;
        put_screen(w, items[k]);
      }
      w.put<uint64_t>(kEndMarker);
      for (size_t k : mine) {
        if (k < to_refine.size()) continue;
        w.put<uint64_t>(items[k]);
        put_outcome(w, outcomes[items[k]]);
      }
      for (const std::string& bytes : options.exchange(w.take())) {
        Reader r(bytes);
        get_screens(r);
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
  }

  // ---- Ranking, cost, Pareto front, the baseline's place. ----------------
  for (size_t i = 0; i < n; ++i) {
    if (simulated[i] == 0 || !outcomes[i].fits || !outcomes[i].error.empty()) continue;
    const SweepTarget& t = out.targets[out.candidates[i].target];
    RankedPlan r;
    r.index = i;
    r.outcome = outcomes[i];
    r.step_lower_bound_s = out.screens[i].step_lower_bound_s;
    r.train_time_s = r.outcome.tokens_per_s > 0 ? options.tokens / r.outcome.tokens_per_s : 0.0;
    r.gpu_hours = r.train_time_s / 3600.0 * static_cast<double>(t.gpus);
    if (t.price_per_gpu_hour) r.cost_usd = r.gpu_hours * *t.price_per_gpu_hour;
    out.ranked.push_back(std::move(r));
  }
  std::sort(out.ranked.begin(), out.ranked.end(), [](const RankedPlan& a, const RankedPlan& b) {
    if (a.outcome.step_time_s != b.outcome.step_time_s) {
      return a.outcome.step_time_s < b.outcome.step_time_s;
    }
    return a.index < b.index;
  });
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
  if (out.baseline && out.baseline->outcome.error.empty()) {
    // Ahead of the baseline: the simulated plans that beat it (ties go to
    // the canonical order, a baseline outside the space last), and at most
    // every skipped plan whose bound does not rule that out.
    SweepOutcome::Baseline& b = *out.baseline;
    const double time = b.outcome.step_time_s;
    uint64_t ahead = 0, maybe = 0;
    for (const RankedPlan& r : out.ranked) {
      if (b.index && r.index == *b.index) continue;
      const bool before = r.outcome.step_time_s < time ||
                          (r.outcome.step_time_s == time && (!b.index || r.index < *b.index));
      ahead += before ? 1 : 0;
    }
    for (size_t i = 0; i < n; ++i) {
      if (simulated[i] == 0 && !out.screens[i].pruned_memory &&
          out.screens[i].step_lower_bound_s <= time) {
        ++maybe;
      }
    }
    b.rank = ahead + 1;
    b.rank_worst = ahead + maybe + 1;
  }
  return out;
}

}  // namespace podsim::scenarios
