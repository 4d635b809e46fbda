#include "stepsim/driver/fit.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "stepsim/scenarios/error.hpp"

namespace stepsim::driver {

namespace {

Eigen::VectorXd clamp(const Eigen::VectorXd& x, const Eigen::VectorXd& lower, const Eigen::VectorXd& upper) {
  return x.cwiseMax(lower).cwiseMin(upper);
}

bool all_finite(const Eigen::VectorXd& v) { return v.allFinite(); }

}  // namespace

FitResult fit_least_squares(std::function<Eigen::VectorXd(const Eigen::VectorXd&)> residuals,
                            Eigen::VectorXd x0, const Eigen::VectorXd& lower, const Eigen::VectorXd& upper,
                            FitOptions options) {
  const Eigen::Index p = x0.size();
  if (lower.size() != p || upper.size() != p) throw InternalError("fit_least_squares: bounds and x0 differ in size");
  if (p == 0) throw InternalError("fit_least_squares: no parameters");
  for (Eigen::Index i = 0; i < p; ++i) {
    if (lower[i] > upper[i]) throw InternalError("fit_least_squares: lower bound above upper bound");
  }

  FitResult res;
  auto evaluate = [&](const Eigen::VectorXd& x) {
    ++res.evaluations;
    return residuals(x);
  };

  Eigen::VectorXd x = clamp(x0, lower, upper);
  Eigen::VectorXd r = evaluate(x);
  if (r.size() == 0 || !all_finite(r)) throw InternalError("fit_least_squares: residuals at the start are empty or not finite");
  double cost = 0.5 * r.squaredNorm();
  // Typical magnitudes of the parameters (|x0_i|, or 1 where x0_i = 0) for finite-difference steps.
  const Eigen::VectorXd typical = x.cwiseAbs().unaryExpr([](double v) { return v > 0 ? v : 1.0; });

  double lambda = options.initial_lambda;
  double nu = 2.0;
  bool need_jacobian = true;
  Eigen::MatrixXd J(r.size(), p);
  Eigen::VectorXd g(p);
  Eigen::MatrixXd A(p, p);

  res.message = "iteration limit";
  while (res.iterations < options.max_iterations) {
    if (need_jacobian) {
      if (res.evaluations + p > options.max_evaluations) {
        res.message = "evaluation limit";
        break;
      }
      for (Eigen::Index i = 0; i < p; ++i) {
        double step = options.relative_step * std::max(std::abs(x[i]), typical[i]);
        if (x[i] + step > upper[i]) step = -step;  // backward difference at an upper bound
        Eigen::VectorXd xs = x;
        xs[i] += step;
        xs = clamp(xs, lower, upper);
        const double actual = xs[i] - x[i];
        if (actual == 0) {
          J.col(i).setZero();  // a degenerate box: the parameter is fixed
          continue;
        }
        const Eigen::VectorXd rs = evaluate(xs);
        if (rs.size() != r.size()) throw InternalError("fit_least_squares: residual vector changed size");
        J.col(i) = (rs - r) / actual;
      }
      A = J.transpose() * J;
      g = J.transpose() * r;
      need_jacobian = false;
      // Gradient test, scaled by the parameters; parameters pinned at a bound with the gradient
      // pointing outward do not count.
      double gmax = 0;
      for (Eigen::Index i = 0; i < p; ++i) {
        const bool pinned = (x[i] <= lower[i] && g[i] > 0) || (x[i] >= upper[i] && g[i] < 0);
        if (!pinned) gmax = std::max(gmax, std::abs(g[i]) * std::max(std::abs(x[i]), typical[i]));
      }
      if (gmax <= options.gradient_tolerance * std::max(cost, 1e-300) || cost == 0) {
        res.converged = true;
        res.message = cost == 0 ? "zero residual" : "gradient tolerance";
        break;
      }
    }
    ++res.iterations;

    // Marquardt damping: scale by diag(J^T J), floored to keep the system regular.
    Eigen::VectorXd diag = A.diagonal().cwiseMax(1e-300);
    Eigen::MatrixXd M = A;
    M.diagonal() += lambda * diag;
    const Eigen::VectorXd delta = M.ldlt().solve(-g);
    const Eigen::VectorXd x_new = clamp(x + delta, lower, upper);
    const Eigen::VectorXd step = x_new - x;

    bool small_step = true;
    for (Eigen::Index i = 0; i < p; ++i) {
      if (std::abs(step[i]) > options.x_tolerance * (std::abs(x[i]) + options.x_tolerance)) small_step = false;
    }
    if (small_step) {
      res.converged = true;
      res.message = "step tolerance";
      break;
    }
    if (res.evaluations + 1 > options.max_evaluations) {
      res.message = "evaluation limit";
      break;
    }
    const Eigen::VectorXd r_new = evaluate(x_new);
    const double cost_new = r_new.size() == r.size() && all_finite(r_new) ? 0.5 * r_new.squaredNorm()
                                                                            : std::numeric_limits<double>::infinity();
    // Predicted decrease of the linear model for the (projected) step.
    const double predicted = -(g.dot(step) + 0.5 * step.dot(A * step));
    const double rho = predicted > 0 ? (cost - cost_new) / predicted : -1.0;
    if (cost_new < cost) {
      const double decrease = (cost - cost_new) / std::max(cost, 1e-300);
      x = x_new;
      r = r_new;
      cost = cost_new;
      need_jacobian = true;
      lambda *= std::max(1.0 / 3.0, 1.0 - std::pow(2.0 * std::clamp(rho, 0.0, 1.0) - 1.0, 3));
      nu = 2.0;
      if (decrease < options.cost_tolerance) {
        res.converged = true;
        res.message = "cost tolerance";
        break;
      }
    } else {
      lambda *= nu;
      nu *= 2.0;
    }
  }

  res.x = x;
  res.residuals = r;
  res.cost = cost;
  return res;
}

FitResult fit_least_absolute(std::function<Eigen::VectorXd(const Eigen::VectorXd&)> residuals,
                             Eigen::VectorXd x0, const Eigen::VectorXd& lower, const Eigen::VectorXd& upper,
                             FitOptions options, AbsoluteFitOptions absolute) {
  if (lower.size() != x0.size() || upper.size() != x0.size())
    throw InternalError("fit_least_squares: bounds and x0 differ in size");
  if (!(absolute.floor > 0) || absolute.max_rounds < 1) throw InternalError("fit_least_absolute: floor must be > 0, rounds >= 1");
  FitResult best;
  best.x = clamp(x0, lower, upper);
  best.residuals = residuals(best.x);
  best.evaluations = 1;
  if (best.residuals.size() == 0 || !all_finite(best.residuals))
    throw InternalError("fit_least_squares: residuals at the start are empty or not finite");
  best.cost = best.residuals.cwiseAbs().sum();
  best.message = "round limit";
  int iterations = 0, evaluations = 1;
  Eigen::VectorXd x = best.x, r = best.residuals;
  for (int round = 0; round < absolute.max_rounds; ++round) {
    const Eigen::VectorXd w = r.cwiseAbs().cwiseMax(absolute.floor).cwiseSqrt().cwiseInverse();
    auto weighted = [&](const Eigen::VectorXd& p) -> Eigen::VectorXd {
      const Eigen::VectorXd rr = residuals(p);
      if (rr.size() != w.size()) throw InternalError("fit_least_squares: residual vector changed size");
      return rr.cwiseProduct(w);
    };
    const FitResult step = fit_least_squares(weighted, x, lower, upper, options);
    iterations += step.iterations;
    evaluations += step.evaluations;
    const Eigen::VectorXd r_new = step.residuals.cwiseQuotient(w);
    const double cost = r_new.cwiseAbs().sum();
    bool moved = false;
    for (Eigen::Index i = 0; i < x.size(); ++i)
      if (std::abs(step.x[i] - x[i]) > options.x_tolerance * (std::abs(x[i]) + options.x_tolerance)) moved = true;
    const bool better = cost < best.cost;
    if (better) {
      best.x = step.x;
      best.residuals = r_new;
      best.cost = cost;
    }
    x = step.x;
    r = r_new;
    if (!moved) {
      best.converged = true;
      best.message = "rounds converged";
      break;
    }
    if (!better && round > 0) {
      best.converged = true;
      best.message = "cost stalled";
      break;
    }
  }
  best.iterations = iterations;
  best.evaluations = evaluations;
  return best;
}

}  // namespace stepsim::driver
