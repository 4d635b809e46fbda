#pragma once
// A small bounded Levenberg-Marquardt least-squares fitter: minimize 1/2 |r(x)|^2 over the box
// lower <= x <= upper. Jacobians are forward finite differences (backward at an upper bound), so
// the residual function may be a whole simulation: not differentiable, slow, one evaluation per
// parameter per iteration. Bounds are kept by clamping every trial point into the box (a projected
// step). The damping is Marquardt's: (J^T J + lambda diag(J^T J)) delta = -J^T r, with lambda
// adapted by the gain ratio (Nielsen 1999: lambda *= max(1/3, 1 - (2 rho - 1)^3) on success,
// lambda *= nu, nu *= 2 on failure).

#include <functional>
#include <string>

#include <Eigen/Dense>

namespace stepsim::driver {

struct FitOptions {
  int max_iterations = 100;
  int max_evaluations = 2000;       // residual evaluations, finite differences included
  double relative_step = 1e-6;      // finite-difference step: relative_step * max(|x_i|, typical_i)
  double initial_lambda = 1e-3;     // relative to diag(J^T J)
  double x_tolerance = 1e-10;       // stop when |delta_i| <= x_tolerance * (|x_i| + x_tolerance) for all i
  double cost_tolerance = 1e-15;    // stop when the relative decrease of the cost is below this
  double gradient_tolerance = 1e-14;  // stop when max |J^T r| (scaled by |x|) falls below this
};

struct FitResult {
  Eigen::VectorXd x;           // the best point found (inside the bounds)
  Eigen::VectorXd residuals;   // r(x)
  double cost = 0;             // 1/2 |r(x)|^2
  int iterations = 0;
  int evaluations = 0;
  bool converged = false;      // a tolerance was met (false: an iteration or evaluation limit)
  std::string message;         // which criterion stopped the fit
};

// Throws stepsim::InternalError when the sizes of x0, lower and upper differ, lower > upper, or
// the residual function returns an empty or non-finite vector at the start.
[[nodiscard]] FitResult fit_least_squares(std::function<Eigen::VectorXd(const Eigen::VectorXd&)> residuals,
                            Eigen::VectorXd x0, const Eigen::VectorXd& lower, const Eigen::VectorXd& upper,
                            FitOptions options = {});

// Least absolute residuals: minimize sum_i |r_i(x)| over the same box, by iteratively reweighted
// least squares (Schlossmacher 1973): each round is a fit_least_squares of w_i r_i(x) with
// w_i = 1 / sqrt(max(|r_i|, floor)) taken at the previous round's point, so that the round's
// squared cost equals the absolute one there. With relative errors as residuals this minimizes their
// mean (the MAPE), and a few records far off move the fit less than least squares lets them.
// Stops when a round moves no parameter by more than options.x_tolerance (relative), when the
// absolute cost stops falling, or after max_rounds. FitResult: the best point by sum |r_i|, cost =
// sum |r_i|, iterations and evaluations summed over the rounds, message "rounds converged", "cost
// stalled" or "round limit". Throws as fit_least_squares.
struct AbsoluteFitOptions {
  int max_rounds = 30;
  double floor = 1e-4;  // smallest |r_i| a weight is taken from (keeps weights finite at r_i = 0)
};
[[nodiscard]] FitResult fit_least_absolute(std::function<Eigen::VectorXd(const Eigen::VectorXd&)> residuals,
                                           Eigen::VectorXd x0, const Eigen::VectorXd& lower,
                                           const Eigen::VectorXd& upper, FitOptions options = {},
                                           AbsoluteFitOptions absolute = {});

}  // namespace stepsim::driver
