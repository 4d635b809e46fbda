#pragma once
// Rounding a byte count computed in double to whole bytes: std::llround, inline. The memory
// timeline and the estimator round at every event and every term, and std::llround is a call into
// libm; this is the same function without the call for every value a byte count takes.

#include <cmath>
#include <cstdint>

namespace stepsim::memory {

// std::llround(x) (halfway cases away from zero) for every finite x with |x| < 2^62; std::llround
// itself beyond.
[[nodiscard]] inline std::int64_t round_bytes(double x) {
  constexpr double kExactBelow = 4611686018427387904.0;  // 2^62
  if (!(x > -kExactBelow && x < kExactBelow)) return static_cast<std::int64_t>(std::llround(x));
  // Truncation is exact here, and so is the fraction x - trunc(x): below 1 in magnitude it is x
  // itself; above, trunc(x) lies within a factor of two of x (Sterbenz).
  auto whole = static_cast<std::int64_t>(x);
  const double fraction = x - static_cast<double>(whole);
  if (fraction >= 0.5) ++whole;
  else if (fraction <= -0.5) --whole;
  return whole;
}

}  // namespace stepsim::memory
