#pragma once

#include <map>
#include <span>
#include <stdexcept>
#include <string>

namespace podsim::calibration {

/// A fit could not be made (too few points, degenerate data). The message says why.
class FitError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Model forms a Fit can have (the `model` string). Documented in
/// calibration/profiles/SCHEMA.md; each names its parameters exactly.
inline constexpr const char* kAlphaBetaModel = "alpha_beta";
inline constexpr const char* kSaturatingModel = "saturating";
inline constexpr const char* kGemmEfficiencyModel = "gemm_efficiency";

/// Fitted parameters of one model form, with how well it fits.
struct Fit {
  /// kAlphaBetaModel:      t(w) = alpha_s + w / beta_per_s                      (w: work)
  ///   params: alpha_s, beta_per_s, half_work (= alpha_s * beta_per_s: the work at
  ///   which the achieved rate w / t is half of beta_per_s).
  /// kSaturatingModel:     y(x) = y_max * x / (x + x_half)
  ///   params: y_max, x_half.
  /// kGemmEfficiencyModel: e(m,n,k) = e_max * k / (k + k_half) * (m n) / (m n + mn_half)
  ///   params: e_max, k_half, mn_half.
  std::string model;
  /// Parameters by name (units in the names or in SCHEMA.md). Ordered: the
  /// profile's JSON is byte-for-byte reproducible.
  std::map<std::string, double> params;
  /// sqrt(mean(((model - measured) / measured)^2)) over the fitted points.
  double rms_rel_error = 0;
  /// Points used by the fit.
  int points = 0;
  /// The raw series it was fitted to and what x / y mean there (set by the
  /// profile builder; empty from the bare fit functions).
  std::string series;
  std::string description;

  /// The parameter of that name; throws std::out_of_range naming it when absent.
  double param(const std::string& name) const;
};

/// Weighted linear least squares for t = alpha + w / beta, minimising the
/// relative error of t (each row scaled by 1/t). A negative alpha is clamped
/// to 0 and beta refitted. Needs >= 2 points with distinct w, all t > 0;
/// throws FitError otherwise or when the slope is not positive.
Fit fit_alpha_beta(std::span<const double> work, std::span<const double> time_s);
/// t(w) of an alpha_beta fit.
double evaluate_alpha_beta(const Fit& fit, double work);

/// y = y_max * x / (x + x_half), fitted by Levenberg-Marquardt on log y
/// (relative error). Needs >= 2 points with distinct x, x > 0 and y > 0.
Fit fit_saturating(std::span<const double> x, std::span<const double> y);
double evaluate_saturating(const Fit& fit, double x);

/// One point of a GEMM efficiency grid: the shape and the achieved fraction
/// of the reference peak.
struct GemmPoint {
  double m = 0, n = 0, k = 0;
  double efficiency = 0;
};
/// e = e_max * k/(k + k_half) * mn/(mn + mn_half), fitted by
/// Levenberg-Marquardt on log e. Needs >= 3 points with positive values.
Fit fit_gemm_efficiency(std::span<const GemmPoint> points);
double evaluate_gemm_efficiency(const Fit& fit, double m, double n, double k);

/// What a working-set sweep says about the last-level cache.
struct CacheAnalysis {
  double cache_bw_bytes_per_s = 0;   ///< median bandwidth of the sets <= capacity_hint / 4
  double memory_bw_bytes_per_s = 0;  ///< median bandwidth of the sets >= 4 * capacity_hint
  /// Working set at which bandwidth, walking up in size, first falls below the
  /// geometric mean of the two plateaus (log-log interpolated between points).
  double capacity_bytes = 0;
};
/// Needs points on both sides of the hint (at least one <= hint/4 and one
/// >= 4 * hint) and a cache plateau above the memory one; throws FitError otherwise.
CacheAnalysis analyze_working_set(std::span<const double> working_set_bytes,
                                  std::span<const double> bw_bytes_per_s,
                                  double capacity_hint_bytes);

/// sqrt(mean(((model - measured) / measured)^2)).
double rms_relative_error(std::span<const double> model, std::span<const double> measured);

/// Median of the values (mean of the two middle ones for an even count); 0 if empty.
double median(std::span<const double> values);

}  // namespace podsim::calibration
