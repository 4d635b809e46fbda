#include <doctest/doctest.h>

#include <cmath>
#include <utility>
#include <vector>

#include "stepsim/driver/fit.hpp"
#include "stepsim/scenarios/error.hpp"

namespace {

using stepsim::driver::fit_least_squares;
using stepsim::driver::FitOptions;

// Points of y = a x / (x + b), the shape of the GEMM efficiency curve, over 1e7 .. 1e12 FLOPs.
struct Saturating {
  Eigen::VectorXd xs, ys;
  Saturating(double a, double b) : xs(11), ys(11) {
    for (Eigen::Index i = 0; i < xs.size(); ++i) {
      xs[i] = std::pow(10.0, 7.0 + 0.5 * static_cast<double>(i));
      ys[i] = a * xs[i] / (xs[i] + b);
    }
  }
  Eigen::VectorXd residuals(const Eigen::VectorXd& p) const {
    Eigen::VectorXd r(xs.size());
    for (Eigen::Index i = 0; i < xs.size(); ++i) r[i] = p[0] * xs[i] / (xs[i] + p[1]) / ys[i] - 1.0;
    return r;
  }
};

}  // namespace

TEST_CASE("fit recovers a and b of a x / (x + b) from exact points") {
  const Saturating data(0.75, 3e9);
  Eigen::VectorXd lo(2), hi(2);
  lo << 0.01, 1e3;
  hi << 1.0, 1e12;
  for (const auto& [a0, b0] : {std::pair{0.5, 1e8}, std::pair{0.2, 1e11}, std::pair{0.95, 1e4}}) {
    Eigen::VectorXd x0(2);
    x0 << a0, b0;
    const auto res = fit_least_squares([&](const Eigen::VectorXd& p) { return data.residuals(p); }, x0, lo, hi);
    CAPTURE(a0);
    CAPTURE(b0);
    CAPTURE(res.message);
    CAPTURE(res.evaluations);
    CHECK(res.converged);
    CHECK(res.x[0] == doctest::Approx(0.75).epsilon(1e-6));
    CHECK(res.x[1] == doctest::Approx(3e9).epsilon(1e-6));
    CHECK(res.cost < 1e-14);
    CHECK(res.evaluations < 200);
  }
}

TEST_CASE("fit keeps parameters inside their bounds") {
  const Saturating data(0.75, 3e9);
  Eigen::VectorXd x0(2), lo(2), hi(2);
  x0 << 0.5, 1e9;
  lo << 0.1, 1e3;
  hi << 0.7, 1e12;  // the true a lies above the box
  const auto res = fit_least_squares([&](const Eigen::VectorXd& p) { return data.residuals(p); }, x0, lo, hi);
  CHECK(res.x[0] <= 0.7);
  CHECK(res.x[0] == doctest::Approx(0.7).epsilon(1e-9));
  CHECK(res.x[1] >= 1e3);
  CHECK(res.cost > 0);
}

TEST_CASE("fit respects the evaluation limit and a start outside the box is clamped") {
  const Saturating data(0.75, 3e9);
  Eigen::VectorXd x0(2), lo(2), hi(2);
  x0 << 5.0, 1e8;
  lo << 0.01, 1e3;
  hi << 1.0, 1e12;
  FitOptions opt;
  opt.max_evaluations = 7;
  int calls = 0;
  const auto res = fit_least_squares(
      [&](const Eigen::VectorXd& p) {
        ++calls;
        CHECK(p[0] <= 1.0);
        return data.residuals(p);
      },
      x0, lo, hi, opt);
  CHECK(calls <= 7);
  CHECK(res.evaluations == calls);
  CHECK_FALSE(res.converged);
  CHECK(res.message == "evaluation limit");
}

TEST_CASE("fit rejects inconsistent inputs") {
  Eigen::VectorXd x0(2), lo(1), hi(2);
  x0 << 1, 1;
  lo << 0;
  hi << 2, 2;
  auto f = [](const Eigen::VectorXd& p) { return p; };
  CHECK_THROWS_WITH_AS(fit_least_squares(f, x0, lo, hi), "fit_least_squares: bounds and x0 differ in size",
                       stepsim::InternalError);
}

TEST_CASE("least absolute fit: the median of the points, where least squares takes their mean") {
  // r_i(x) = x - a_i: sum |r_i| is least at the median of a (2), sum r_i^2 at the mean (13/3).
  const std::vector<double> a{1.0, 2.0, 10.0};
  auto residuals = [&](const Eigen::VectorXd& p) {
    Eigen::VectorXd r(3);
    for (Eigen::Index i = 0; i < 3; ++i) r[i] = p[0] - a[static_cast<std::size_t>(i)];
    return r;
  };
  Eigen::VectorXd x0(1), lo(1), hi(1);
  x0 << 7.0;
  lo << -100.0;
  hi << 100.0;
  const auto ls = fit_least_squares(residuals, x0, lo, hi);
  CHECK(ls.x[0] == doctest::Approx(13.0 / 3.0).epsilon(1e-6));
  const auto la = stepsim::driver::fit_least_absolute(residuals, x0, lo, hi);
  CAPTURE(la.message);
  CHECK(la.converged);
  CHECK(la.x[0] == doctest::Approx(2.0).epsilon(1e-3));
  // cost is sum |r_i| at the point: |2 - 1| + 0 + |2 - 10| = 9
  CHECK(la.cost == doctest::Approx(9.0).epsilon(1e-3));
  CHECK(la.residuals.size() == 3);
  CHECK(la.evaluations > 1);

  // In a box that excludes the median the fit stops at the bound nearest to it.
  lo << 3.0;
  hi << 5.0;
  const auto boxed = stepsim::driver::fit_least_absolute(residuals, x0, lo, hi);
  CHECK(boxed.x[0] == doctest::Approx(3.0).epsilon(1e-9));
}

TEST_CASE("least absolute fit: one record far off moves the fit much less than least squares") {
  // Relative errors p / y_i - 1 of four consistent records (y = 0.80 ... 0.83) and one at 0.60.
  const std::vector<double> y{0.80, 0.81, 0.82, 0.83, 0.60};
  auto residuals = [&](const Eigen::VectorXd& p) {
    Eigen::VectorXd r(5);
    for (Eigen::Index i = 0; i < 5; ++i) r[i] = p[0] / y[static_cast<std::size_t>(i)] - 1.0;
    return r;
  };
  Eigen::VectorXd x0(1), lo(1), hi(1);
  x0 << 0.7;
  lo << 0.2;
  hi << 0.95;
  const auto ls = fit_least_squares(residuals, x0, lo, hi);
  const auto la = stepsim::driver::fit_least_absolute(residuals, x0, lo, hi);
  // Weighted median of y with weights 1/y_i (the sum of |p / y_i - 1| is piecewise linear in p): 0.81.
  CHECK(la.x[0] == doctest::Approx(0.81).epsilon(1e-3));
  CHECK(ls.x[0] < 0.78);
  CHECK(la.cost < ls.residuals.cwiseAbs().sum());
}
