#pragma once

#include <Eigen/Dense>
#include <functional>
#include <string>

namespace podsim::calibration {

/// r(x): the residual vector of a least-squares problem at parameters x.
/// Its length must not change between calls.
using ResidualFunction = std::function<Eigen::VectorXd(const Eigen::VectorXd& x)>;
/// J(x) = d r / d x (rows: residuals, columns: parameters).
using JacobianFunction = std::function<Eigen::MatrixXd(const Eigen::VectorXd& x)>;

struct LmOptions {
  int max_iterations = 200;
  /// Stop when the relative decrease of the cost in an accepted step is below this.
  double cost_tolerance = 1e-12;
  /// Stop when the step is below this, relative to |x| + this.
  double step_tolerance = 1e-10;
  /// Starting damping, relative to the largest diagonal entry of J^T J.
  double initial_lambda = 1e-3;
  /// Relative step of the forward-difference Jacobian (used when none is given).
  double jacobian_step = 1e-7;
};

struct LmResult {
  Eigen::VectorXd x;       ///< best parameters found
  double cost = 0;         ///< 0.5 * |r(x)|^2 at x
  int iterations = 0;      ///< Jacobian evaluations
  bool converged = false;  ///< a tolerance was met (false: iteration limit or a stall)
  std::string message;     ///< why it stopped
};

/// Levenberg-Marquardt (Marquardt's diagonal scaling) minimising 0.5 |r(x)|^2
/// from x0. Without `jacobian` a forward-difference Jacobian is used. A
/// residual that is not finite at a trial point rejects that step (raises the
/// damping); one not finite at x0 throws std::invalid_argument.
LmResult levenberg_marquardt(const ResidualFunction& residual, Eigen::VectorXd x0,
                             const LmOptions& options = {}, const JacobianFunction& jacobian = {});

}  // namespace podsim::calibration
