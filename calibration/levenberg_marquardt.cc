#include "calibration/levenberg_marquardt.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace podsim::calibration {
namespace {

bool all_finite(const Eigen::VectorXd& v) { return v.allFinite(); }

Eigen::MatrixXd numeric_jacobian(const ResidualFunction& residual, const Eigen::VectorXd& x,
                                 const Eigen::VectorXd& r0, double rel_step) {
  Eigen::MatrixXd jac(r0.size(), x.size());
  for (Eigen::Index j = 0; j < x.size(); ++j) {
    Eigen::VectorXd xp = x;
    const double h = rel_step * std::max(1.0, std::abs(x[j]));
    xp[j] += h;
    const Eigen::VectorXd rp = residual(xp);
    if (rp.size() != r0.size())
      throw std::invalid_argument("residual length changed between calls");
    jac.col(j) = (rp - r0) / h;
  }
  return jac;
}

}  // namespace

LmResult levenberg_marquardt(const ResidualFunction& residual, Eigen::VectorXd x0,
                             const LmOptions& options, const JacobianFunction& jacobian) {
  LmResult result;
  result.x = std::move(x0);
  Eigen::VectorXd r = residual(result.x);
  if (!all_finite(r) || !all_finite(result.x)) {
    throw std::invalid_argument(
        "Levenberg-Marquardt: residual is not finite at the starting point");
  }
  if (r.size() == 0) throw std::invalid_argument("Levenberg-Marquardt: empty residual");
  result.cost = 0.5 * r.squaredNorm();
  double lambda = -1.0;  // set from J^T J on the first iteration
  result.message = "iteration limit";

  for (int it = 0; it < options.max_iterations; ++it) {
    result.iterations = it + 1;
    const Eigen::MatrixXd jac =
        jacobian ? jacobian(result.x)
                 : numeric_jacobian(residual, result.x, r, options.jacobian_step);
    if (jac.rows() != r.size() || jac.cols() != result.x.size()) {
      throw std::invalid_argument("Levenberg-Marquardt: Jacobian has the wrong shape");
    }
    const Eigen::MatrixXd jtj = jac.transpose() * jac;
    const Eigen::VectorXd grad = jac.transpose() * r;
    if (grad.lpNorm<Eigen::Infinity>() == 0.0) {
      result.converged = true;
      result.message = "zero gradient";
      return result;
    }
    // Marquardt scaling: damp by the diagonal of J^T J (floored so that a
    // parameter the residual ignores still gets a finite step).
    Eigen::VectorXd diag = jtj.diagonal();
    const double diag_max = std::max(diag.maxCoeff(), 1e-300);
    for (Eigen::Index j = 0; j < diag.size(); ++j) diag[j] = std::max(diag[j], 1e-12 * diag_max);
    if (lambda < 0) lambda = options.initial_lambda;

    bool accepted = false;
    for (int attempt = 0; attempt < 60 && !accepted; ++attempt) {
      Eigen::MatrixXd a = jtj;
      a.diagonal() += lambda * diag;
      const Eigen::VectorXd step = a.ldlt().solve(-grad);
      if (!all_finite(step)) {
        lambda *= 10.0;
        continue;
      }
      const Eigen::VectorXd x_new = result.x + step;
      const Eigen::VectorXd r_new = residual(x_new);
      if (r_new.size() != r.size())
        throw std::invalid_argument("residual length changed between calls");
      const double cost_new = all_finite(r_new) ? 0.5 * r_new.squaredNorm() : INFINITY;
      if (cost_new < result.cost) {
        const double decrease = (result.cost - cost_new) / std::max(result.cost, 1e-300);
        const double step_rel = step.norm() / (result.x.norm() + options.step_tolerance);
        result.x = x_new;
        r = r_new;
        result.cost = cost_new;
        lambda = std::max(lambda / 10.0, 1e-15);
        accepted = true;
        if (decrease < options.cost_tolerance) {
          result.converged = true;
          result.message = "cost decrease below tolerance";
          return result;
        }
        if (step_rel < options.step_tolerance) {
          result.converged = true;
          result.message = "step below tolerance";
          return result;
        }
      } else {
        lambda *= 10.0;
      }
    }
    if (!accepted) {
      // No damping found a lower cost: x is a (local) minimum to working precision.
      result.converged = true;
      result.message = "no further decrease";
      return result;
    }
    if (result.cost == 0.0) {
      result.converged = true;
      result.message = "zero residual";
      return result;
    }
  }
  return result;
}

}  // namespace podsim::calibration
