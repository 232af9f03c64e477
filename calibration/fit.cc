#include "calibration/fit.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "calibration/levenberg_marquardt.h"

namespace podsim::calibration {
namespace {

void require_same_size(size_t a, size_t b, const char* what) {
  if (a != b) throw FitError(std::string(what) + ": inputs have different lengths");
}

bool distinct_values(std::span<const double> v) {
  return std::any_of(v.begin(), v.end(), [&](double x) { return x != v.front(); });
}

}  // namespace

double Fit::param(const std::string& name) const {
  const auto it = params.find(name);
  if (it == params.end())
    throw std::out_of_range("fit of model '" + model + "' has no parameter '" + name + "'");
  return it->second;
}

double median(std::span<const double> values) {
  if (values.empty()) return 0.0;
  std::vector<double> v(values.begin(), values.end());
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double rms_relative_error(std::span<const double> model, std::span<const double> measured) {
  require_same_size(model.size(), measured.size(), "rms_relative_error");
  if (model.empty()) return 0.0;
  double sum = 0;
  for (size_t i = 0; i < model.size(); ++i) {
    const double rel = (model[i] - measured[i]) / measured[i];
    sum += rel * rel;
  }
  return std::sqrt(sum / static_cast<double>(model.size()));
}

Fit fit_alpha_beta(std::span<const double> work, std::span<const double> time_s) {
  require_same_size(work.size(), time_s.size(), "alpha-beta fit");
  if (work.size() < 2) throw FitError("alpha-beta fit needs at least 2 points");
  if (!distinct_values(work)) throw FitError("alpha-beta fit needs at least 2 distinct work sizes");
  for (size_t i = 0; i < work.size(); ++i) {
    if (!(time_s[i] > 0) || !std::isfinite(time_s[i]) || !(work[i] >= 0) ||
        !std::isfinite(work[i])) {
      throw FitError("alpha-beta fit needs finite times > 0 and work >= 0");
    }
  }
  // t_i = alpha + w_i * g (g = 1/beta). Dividing each row by t_i minimises the
  // relative error, so microsecond latencies weigh as much as second-long copies.
  const auto n = static_cast<Eigen::Index>(work.size());
  Eigen::MatrixXd a(n, 2);
  Eigen::VectorXd b = Eigen::VectorXd::Ones(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    a(i, 0) = 1.0 / time_s[static_cast<size_t>(i)];
    a(i, 1) = work[static_cast<size_t>(i)] / time_s[static_cast<size_t>(i)];
  }
  Eigen::Vector2d sol = a.colPivHouseholderQr().solve(b);
  double alpha = sol[0];
  double g = sol[1];
  if (alpha < 0) {
    // A pure-bandwidth curve: refit through the origin.
    alpha = 0;
    g = a.col(1).dot(b) / a.col(1).squaredNorm();
  }
  if (!(g > 0) || !std::isfinite(g)) {
    throw FitError("alpha-beta fit: time does not grow with work (slope <= 0)");
  }
  Fit fit;
  fit.model = kAlphaBetaModel;
  fit.params["alpha_s"] = alpha;
  fit.params["beta_per_s"] = 1.0 / g;
  fit.params["half_work"] = alpha / g;
  fit.points = static_cast<int>(work.size());
  std::vector<double> model(work.size());
  for (size_t i = 0; i < work.size(); ++i) model[i] = alpha + work[i] * g;
  fit.rms_rel_error = rms_relative_error(model, time_s);
  return fit;
}

double evaluate_alpha_beta(const Fit& fit, double work) {
  return fit.param("alpha_s") + work / fit.param("beta_per_s");
}

Fit fit_saturating(std::span<const double> x, std::span<const double> y) {
  require_same_size(x.size(), y.size(), "saturating fit");
  if (x.size() < 2) throw FitError("saturating fit needs at least 2 points");
  if (!distinct_values(x)) throw FitError("saturating fit needs at least 2 distinct x");
  for (size_t i = 0; i < x.size(); ++i) {
    if (!(x[i] > 0) || !(y[i] > 0) || !std::isfinite(x[i]) || !std::isfinite(y[i])) {
      throw FitError("saturating fit needs finite x > 0 and y > 0");
    }
  }
  // Parameters in log space keep y_max and x_half positive.
  const auto residual = [&](const Eigen::VectorXd& p) {
    Eigen::VectorXd r(static_cast<Eigen::Index>(x.size()));
    const double y_max = std::exp(p[0]);
    const double x_half = std::exp(p[1]);
    for (size_t i = 0; i < x.size(); ++i) {
      r[static_cast<Eigen::Index>(i)] = std::log(y_max * x[i] / (x[i] + x_half)) - std::log(y[i]);
    }
    return r;
  };
  const double y_top = *std::max_element(y.begin(), y.end());
  const double x_mid = median(x);
  Eigen::VectorXd p0(2);
  p0 << std::log(y_top * 1.1), std::log(x_mid * 0.25);
  const LmResult lm = levenberg_marquardt(residual, p0);
  Fit fit;
  fit.model = kSaturatingModel;
  fit.params["y_max"] = std::exp(lm.x[0]);
  fit.params["x_half"] = std::exp(lm.x[1]);
  fit.points = static_cast<int>(x.size());
  std::vector<double> model(x.size());
  for (size_t i = 0; i < x.size(); ++i) model[i] = evaluate_saturating(fit, x[i]);
  fit.rms_rel_error = rms_relative_error(model, y);
  return fit;
}

double evaluate_saturating(const Fit& fit, double x) {
  return fit.param("y_max") * x / (x + fit.param("x_half"));
}

Fit fit_gemm_efficiency(std::span<const GemmPoint> points) {
  if (points.size() < 3) throw FitError("GEMM efficiency fit needs at least 3 shapes");
  for (const GemmPoint& p : points) {
    if (!(p.m > 0 && p.n > 0 && p.k > 0 && p.efficiency > 0) || !std::isfinite(p.efficiency)) {
      throw FitError("GEMM efficiency fit needs positive shapes and efficiencies");
    }
  }
  const auto residual = [&](const Eigen::VectorXd& q) {
    Eigen::VectorXd r(static_cast<Eigen::Index>(points.size()));
    const double e_max = std::exp(q[0]);
    const double k_half = std::exp(q[1]);
    const double mn_half = std::exp(q[2]);
    for (size_t i = 0; i < points.size(); ++i) {
      const GemmPoint& p = points[i];
      const double mn = p.m * p.n;
      const double e = e_max * p.k / (p.k + k_half) * mn / (mn + mn_half);
      r[static_cast<Eigen::Index>(i)] = std::log(e) - std::log(p.efficiency);
    }
    return r;
  };
  std::vector<double> ks, mns;
  double e_top = 0;
  for (const GemmPoint& p : points) {
    ks.push_back(p.k);
    mns.push_back(p.m * p.n);
    e_top = std::max(e_top, p.efficiency);
  }
  Eigen::VectorXd q0(3);
  q0 << std::log(e_top * 1.1), std::log(median(ks) * 0.1), std::log(median(mns) * 0.1);
  const LmResult lm = levenberg_marquardt(residual, q0);
  Fit fit;
  fit.model = kGemmEfficiencyModel;
  fit.params["e_max"] = std::exp(lm.x[0]);
  fit.params["k_half"] = std::exp(lm.x[1]);
  fit.params["mn_half"] = std::exp(lm.x[2]);
  fit.points = static_cast<int>(points.size());
  std::vector<double> model, measured;
  for (const GemmPoint& p : points) {
    model.push_back(evaluate_gemm_efficiency(fit, p.m, p.n, p.k));
    measured.push_back(p.efficiency);
  }
  fit.rms_rel_error = rms_relative_error(model, measured);
  return fit;
}

double evaluate_gemm_efficiency(const Fit& fit, double m, double n, double k) {
  const double mn = m * n;
  return fit.param("e_max") * k / (k + fit.param("k_half")) * mn / (mn + fit.param("mn_half"));
}

CacheAnalysis analyze_working_set(std::span<const double> working_set_bytes,
                                  std::span<const double> bw_bytes_per_s,
                                  double capacity_hint_bytes) {
  require_same_size(working_set_bytes.size(), bw_bytes_per_s.size(), "working-set analysis");
  if (!(capacity_hint_bytes > 0))
    throw FitError("working-set analysis needs a cache size hint > 0");
  std::vector<size_t> order(working_set_bytes.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return working_set_bytes[a] < working_set_bytes[b]; });
  std::vector<double> small, large;
  for (size_t i : order) {
    if (!(bw_bytes_per_s[i] > 0)) throw FitError("working-set analysis needs bandwidths > 0");
    if (working_set_bytes[i] <= capacity_hint_bytes / 4) small.push_back(bw_bytes_per_s[i]);
    if (working_set_bytes[i] >= capacity_hint_bytes * 4) large.push_back(bw_bytes_per_s[i]);
  }
  if (small.empty() || large.empty()) {
    throw FitError("working-set sweep must reach below 1/4 and above 4x the cache size");
  }
  CacheAnalysis out;
  out.cache_bw_bytes_per_s = median(small);
  out.memory_bw_bytes_per_s = median(large);
  if (!(out.cache_bw_bytes_per_s > out.memory_bw_bytes_per_s)) {
    throw FitError("working-set sweep shows no cache plateau above the memory bandwidth");
  }
  const double mid = std::sqrt(out.cache_bw_bytes_per_s * out.memory_bw_bytes_per_s);
  for (size_t j = 1; j < order.size(); ++j) {
    const size_t a = order[j - 1];
    const size_t b = order[j];
    if (bw_bytes_per_s[a] >= mid && bw_bytes_per_s[b] < mid) {
      // Interpolate log(bandwidth) linearly in log(working set).
      const double la = std::log(working_set_bytes[a]);
      const double lb = std::log(working_set_bytes[b]);
      const double ya = std::log(bw_bytes_per_s[a]);
      const double yb = std::log(bw_bytes_per_s[b]);
      const double t = (std::log(mid) - ya) / (yb - ya);
      out.capacity_bytes = std::exp(la + t * (lb - la));
      return out;
    }
  }
  throw FitError("working-set sweep never crosses between its cache and memory plateaus");
}

}  // namespace podsim::calibration
