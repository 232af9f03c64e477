#include "calibration/fit.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "calibration/levenberg_marquardt.h"

namespace podsim::calibration {
namespace {

// Multiplicative noise of a given relative size, from a fixed seed.
class Noise {
 public:
  explicit Noise(double rel) : rel_(rel) {}
  double operator()(double v) { return v * (1.0 + rel_ * dist_(rng_)); }

 private:
  double rel_;
  std::mt19937_64 rng_{12345};
  std::normal_distribution<double> dist_{0.0, 1.0};
};

TEST(AlphaBeta, RecoversLatencyAndBandwidthFromNoisyCopies) {
  // A link of 5 us latency and 400 GB/s, sampled 1 KiB .. 4 GiB with 1% noise.
  const double alpha = 5e-6, beta = 400e9;
  Noise noise(0.01);
  std::vector<double> w, t;
  for (double bytes = 1024; bytes <= 4.0 * (1 << 30); bytes *= 4) {
    w.push_back(bytes);
    t.push_back(noise(alpha + bytes / beta));
  }
  const Fit fit = fit_alpha_beta(w, t);
  EXPECT_EQ(fit.model, kAlphaBetaModel);
  EXPECT_NEAR(fit.param("alpha_s"), alpha, 0.03 * alpha);
  EXPECT_NEAR(fit.param("beta_per_s"), beta, 0.03 * beta);
  EXPECT_NEAR(fit.param("half_work"), alpha * beta, 0.06 * alpha * beta);
  EXPECT_LT(fit.rms_rel_error, 0.03);
  EXPECT_GT(fit.rms_rel_error, 0.0);
  EXPECT_EQ(fit.points, static_cast<int>(w.size()));
  EXPECT_NEAR(evaluate_alpha_beta(fit, 1e9), alpha + 1e9 / beta, 0.03 * (alpha + 1e9 / beta));
}

TEST(AlphaBeta, ExactDataGivesExactFitAndZeroResidual) {
  const std::vector<double> w = {0, 10, 20, 40};
  std::vector<double> t;
  for (double x : w) t.push_back(2.0 + x / 5.0);
  const Fit fit = fit_alpha_beta(w, t);
  EXPECT_NEAR(fit.param("alpha_s"), 2.0, 1e-12);
  EXPECT_NEAR(fit.param("beta_per_s"), 5.0, 1e-12);
  EXPECT_NEAR(fit.rms_rel_error, 0.0, 1e-12);
}

TEST(AlphaBeta, NegativeInterceptIsClampedToPureBandwidth) {
  // Time proportional to work minus a little: the unconstrained intercept is < 0.
  const std::vector<double> w = {100, 200, 400, 800};
  const std::vector<double> t = {0.9, 1.95, 3.98, 8.0};
  const Fit fit = fit_alpha_beta(w, t);
  EXPECT_EQ(fit.param("alpha_s"), 0.0);
  EXPECT_NEAR(fit.param("beta_per_s"), 100.0, 5.0);
}

TEST(AlphaBeta, RejectsDegenerateInput) {
  const std::vector<double> one = {1.0};
  EXPECT_THROW(fit_alpha_beta(one, one), FitError);
  const std::vector<double> same = {5.0, 5.0, 5.0};
  const std::vector<double> t = {1.0, 1.1, 0.9};
  EXPECT_THROW(fit_alpha_beta(same, t), FitError);
  const std::vector<double> w = {1.0, 2.0};
  const std::vector<double> falling = {2.0, 1.0};
  EXPECT_THROW(fit_alpha_beta(w, falling), FitError);
  const std::vector<double> zero_t = {0.0, 1.0};
  EXPECT_THROW(fit_alpha_beta(w, zero_t), FitError);
}

TEST(Saturating, RecoversPlateauAndHalfPoint) {
  // Attention-like efficiency: 0.62 * s / (s + 900), with 2% noise.
  Noise noise(0.02);
  std::vector<double> x, y;
  for (double s : {256.0, 512.0, 1024.0, 2048.0, 4096.0, 8192.0, 16384.0}) {
    x.push_back(s);
    y.push_back(noise(0.62 * s / (s + 900.0)));
  }
  const Fit fit = fit_saturating(x, y);
  EXPECT_EQ(fit.model, kSaturatingModel);
  EXPECT_NEAR(fit.param("y_max"), 0.62, 0.03);
  EXPECT_NEAR(fit.param("x_half"), 900.0, 120.0);
  EXPECT_LT(fit.rms_rel_error, 0.04);
  EXPECT_NEAR(evaluate_saturating(fit, 900.0),
              fit.param("y_max") * 900.0 / (900.0 + fit.param("x_half")), 1e-12);
}

TEST(Saturating, RejectsNonPositiveValues) {
  const std::vector<double> x = {1.0, 2.0};
  const std::vector<double> y = {0.5, -0.1};
  EXPECT_THROW(fit_saturating(x, y), FitError);
}

TEST(GemmEfficiency, RecoversSurfaceFromNoisyGrid) {
  const double e_max = 0.82, k_half = 300.0, mn_half = 2.5e6;
  Noise noise(0.02);
  std::vector<GemmPoint> grid;
  for (double mn : {256.0, 1024.0, 2048.0, 4096.0, 8192.0, 16384.0}) {
    for (double k : {128.0, 512.0, 2048.0, 8192.0}) {
      const double e = e_max * k / (k + k_half) * (mn * mn) / (mn * mn + mn_half);
      grid.push_back(GemmPoint{mn, mn, k, noise(e)});
    }
  }
  const Fit fit = fit_gemm_efficiency(grid);
  EXPECT_EQ(fit.model, kGemmEfficiencyModel);
  EXPECT_NEAR(fit.param("e_max"), e_max, 0.03);
  EXPECT_NEAR(fit.param("k_half"), k_half, 40.0);
  EXPECT_NEAR(fit.param("mn_half"), mn_half, 0.25 * mn_half);
  EXPECT_LT(fit.rms_rel_error, 0.04);
  EXPECT_NEAR(evaluate_gemm_efficiency(fit, 1e9, 1e9, 1e9), fit.param("e_max"), 1e-6);
}

TEST(WorkingSet, FindsCachePlateausAndCapacity) {
  // 7 TB/s below 48 MiB, 3.9 TB/s above, a sharp drop in between.
  std::vector<double> ws, bw;
  for (double mib = 1; mib <= 1024; mib *= 2) {
    ws.push_back(mib * 1024 * 1024);
    bw.push_back(mib <= 32 ? 7.0e12 : (mib >= 64 ? 3.9e12 : 0.0));
  }
  // 32 -> 64 MiB: the crossing of the geometric mean is interpolated between them.
  const CacheAnalysis c = analyze_working_set(ws, bw, 50.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(c.cache_bw_bytes_per_s, 7.0e12);
  EXPECT_DOUBLE_EQ(c.memory_bw_bytes_per_s, 3.9e12);
  // log-linear interpolation: mid = sqrt(7*3.9) lies halfway in log(bw) between the
  // two points, so the capacity is the geometric mean of 32 and 64 MiB.
  EXPECT_NEAR(c.capacity_bytes, std::sqrt(32.0 * 64.0) * 1024 * 1024, 1.0);
}

TEST(WorkingSet, RejectsSweepThatMissesTheCache) {
  const std::vector<double> ws = {1e9, 2e9};
  const std::vector<double> bw = {3e12, 3e12};
  EXPECT_THROW(analyze_working_set(ws, bw, 50e6), FitError);
}

TEST(Median, OddEvenAndEmpty) {
  const std::vector<double> odd = {3, 1, 2};
  const std::vector<double> even = {4, 1, 3, 2};
  EXPECT_EQ(median(odd), 2.0);
  EXPECT_EQ(median(even), 2.5);
  EXPECT_EQ(median(std::vector<double>{}), 0.0);
}

TEST(LevenbergMarquardt, SolvesRosenbrockFromTheClassicStart) {
  const ResidualFunction r = [](const Eigen::VectorXd& x) {
    Eigen::VectorXd v(2);
    v << 10.0 * (x[1] - x[0] * x[0]), 1.0 - x[0];
    return v;
  };
  Eigen::VectorXd x0(2);
  x0 << -1.2, 1.0;
  const LmResult res = levenberg_marquardt(r, x0);
  EXPECT_TRUE(res.converged) << res.message;
  EXPECT_NEAR(res.x[0], 1.0, 1e-6);
  EXPECT_NEAR(res.x[1], 1.0, 1e-6);
  EXPECT_LT(res.cost, 1e-12);
}

TEST(LevenbergMarquardt, AnalyticJacobianMatchesNumericOnExponentialFit) {
  // y = a * exp(-b t) sampled exactly; both Jacobians must reach a = 3, b = 0.7.
  std::vector<double> t, y;
  for (int i = 0; i < 20; ++i) {
    t.push_back(0.25 * i);
    y.push_back(3.0 * std::exp(-0.7 * 0.25 * i));
  }
  const ResidualFunction r = [&](const Eigen::VectorXd& p) {
    Eigen::VectorXd v(static_cast<Eigen::Index>(t.size()));
    for (size_t i = 0; i < t.size(); ++i)
      v[static_cast<Eigen::Index>(i)] = p[0] * std::exp(-p[1] * t[i]) - y[i];
    return v;
  };
  const JacobianFunction jac = [&](const Eigen::VectorXd& p) {
    Eigen::MatrixXd j(static_cast<Eigen::Index>(t.size()), 2);
    for (size_t i = 0; i < t.size(); ++i) {
      const auto row = static_cast<Eigen::Index>(i);
      j(row, 0) = std::exp(-p[1] * t[i]);
      j(row, 1) = -p[0] * t[i] * std::exp(-p[1] * t[i]);
    }
    return j;
  };
  Eigen::VectorXd x0(2);
  x0 << 1.0, 0.1;
  const LmResult numeric = levenberg_marquardt(r, x0);
  const LmResult analytic = levenberg_marquardt(r, x0, {}, jac);
  for (const LmResult* res : {&numeric, &analytic}) {
    EXPECT_NEAR(res->x[0], 3.0, 1e-6);
    EXPECT_NEAR(res->x[1], 0.7, 1e-6);
  }
}

TEST(LevenbergMarquardt, RejectsNonFiniteStart) {
  const ResidualFunction r = [](const Eigen::VectorXd& x) {
    Eigen::VectorXd v(1);
    v << std::log(x[0]);
    return v;
  };
  Eigen::VectorXd x0(1);
  x0 << -1.0;
  EXPECT_THROW(levenberg_marquardt(r, x0), std::invalid_argument);
}

TEST(LevenbergMarquardt, StepsAroundRegionsWhereTheResidualIsUndefined) {
  // r = log(x) - log(2): a full Gauss-Newton step from x = 0.1 overshoots to
  // negative x where log is NaN; the damping must recover and reach x = 2.
  const ResidualFunction r = [](const Eigen::VectorXd& x) {
    Eigen::VectorXd v(1);
    v << std::log(x[0]) - std::log(2.0);
    return v;
  };
  Eigen::VectorXd x0(1);
  x0 << 0.1;
  const LmResult res = levenberg_marquardt(r, x0);
  EXPECT_NEAR(res.x[0], 2.0, 1e-6);
}

}  // namespace
}  // namespace podsim::calibration
