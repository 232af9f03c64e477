#include "strategies/moe_imbalance.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace podsim::strategies {

namespace {

double integrate_expected_max(int64_t n) {
  // E[max] = integral of x * n phi(x) Phi(x)^(n-1) dx, by the trapezoid rule
  // on [-10, 10] (the integrand is below 1e-20 outside for n <= 1e6).
  constexpr int kSteps = 4000;
  constexpr double kLow = -10, kHigh = 10;
  const double step = (kHigh - kLow) / kSteps;
  const double nd = static_cast<double>(n);
  double sum = 0;
  for (int i = 0; i <= kSteps; ++i) {
    const double x = kLow + step * i;
    const double pdf = std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI);
    const double cdf = 0.5 * std::erfc(-x / std::sqrt(2.0));
    const double f = x * nd * pdf * std::pow(cdf, nd - 1);
    sum += (i == 0 || i == kSteps) ? f / 2 : f;
  }
  return sum * step;
}

}  // namespace

double expected_max_standard_normal(int64_t n) {
  if (n <= 1) return 0.0;
  // Every MoE op of every plan a sweep prices asks for the same few n (its
  // ep sizes): each thread integrates each n once.
  thread_local std::unordered_map<int64_t, double> known;
  const auto it = known.find(n);
  if (it != known.end()) return it->second;
  return known.emplace(n, integrate_expected_max(n)).first->second;
}

double busiest_rank_load(const MoeShape& moe, int64_t tokens, int64_t ep) {
  if (ep <= 1 || tokens <= 0) return 1.0;
  const double e = static_cast<double>(moe.experts), k = static_cast<double>(moe.top_k);
  const double t = static_cast<double>(tokens), n = static_cast<double>(ep);
  const double noise = e > 1 ? (1 - 1 / n) * (e - k) / (e - 1) / (t * k) : 0.0;
  double skew = 0;
  if (moe.load_balance == LoadBalance::kLearned) {
    const double violation = moe.max_violation.value_or(
        moe.balancing == RouterBalancing::kLossFree ? kLossFreeMaxViolation : kAuxLossMaxViolation);
    const double spread = violation / expected_max_standard_normal(kMaxViolationReferenceExperts);
    skew = spread * spread * n / e;
  }
  double load = 1 + expected_max_standard_normal(ep) * std::sqrt(noise + skew);
  if (moe.capacity_factor) load = std::min(load, std::max(1.0, *moe.capacity_factor));
  return std::max(1.0, load);
}

}  // namespace podsim::strategies
