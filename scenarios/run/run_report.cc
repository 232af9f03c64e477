#include "scenarios/run/run_report.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace podsim::scenarios {
namespace {

Spread spread_of(std::vector<double> values) {
  Spread s;
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  double sum = 0;
  for (double v : values) sum += v;
  s.mean = sum / static_cast<double>(values.size());
  // Hyndman and Fan's type 7 (R's and NumPy's default): linear between the
  // order statistics at (n - 1) q.
  const auto at = [&](double q) {
    const double h = static_cast<double>(values.size() - 1) * q;
    const auto lo = static_cast<size_t>(std::floor(h));
    const size_t hi = std::min(lo + 1, values.size() - 1);
    return values[lo] + (h - static_cast<double>(lo)) * (values[hi] - values[lo]);
  };
  s.median = at(0.5);
  s.low = at(0.05);
  s.high = at(0.95);
  return s;
}

}  // namespace

RunReport sample_runs(const RunModel& model, int64_t samples, uint64_t seed) {
  RunReport r;
  r.model = model;
  r.samples = samples;
  r.seed = seed;
  r.failure_free_wall_s = model.inputs.work_s();
  r.expected_wall_s = expected_wall_s(model.inputs);
  const auto n = static_cast<size_t>(std::max<int64_t>(samples, 0));
  std::vector<double> wall(n), hours(n), ettr(n), goodput(n), interruptions(n);
  const double gpus = static_cast<double>(model.gpus);
  for (size_t i = 0; i < n; ++i) {
    const RunSample s = sample_run(model.inputs, seed, i);
    wall[i] = s.wall_s;
    hours[i] = s.wall_s * gpus / 3600;
    ettr[i] = s.wall_s > 0 ? (s.useful_s + s.straggler_s) / s.wall_s : 1.0;
    goodput[i] = s.wall_s > 0 ? model.tokens / s.wall_s : 0.0;
    interruptions[i] = static_cast<double>(s.interruptions);
    r.mean.wall_s += s.wall_s;
    r.mean.useful_s += s.useful_s;
    r.mean.straggler_s += s.straggler_s;
    r.mean.lost_s += s.lost_s;
    r.mean.checkpoint_s += s.checkpoint_s;
    r.mean.restart_s += s.restart_s;
  }
  if (n > 0) {
    const double k = 1.0 / static_cast<double>(n);
    for (double* part : {&r.mean.wall_s, &r.mean.useful_s, &r.mean.straggler_s, &r.mean.lost_s,
                         &r.mean.checkpoint_s, &r.mean.restart_s}) {
      *part *= k;
    }
  }
  r.wall_s = spread_of(std::move(wall));
  r.gpu_hours = spread_of(std::move(hours));
  r.ettr = spread_of(std::move(ettr));
  r.goodput_tokens_per_s = spread_of(std::move(goodput));
  r.interruptions = spread_of(std::move(interruptions));
  return r;
}

}  // namespace podsim::scenarios
