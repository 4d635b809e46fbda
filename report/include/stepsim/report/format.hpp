#pragma once
// Fixed number formatting shared by every writer (deterministic output).

#include <cstdint>
#include <string>

namespace stepsim::report {

// printf-style "%.*f".
[[nodiscard]] std::string fixed(double value, int decimals);
// `value` to `digits` significant digits, shortest form (printf %g).
[[nodiscard]] std::string significant(double value, int digits);
// Bytes as GiB with `decimals` decimals.
[[nodiscard]] std::string gib(std::int64_t bytes, int decimals = 3);
// Right-aligned (positive width) or left-aligned (negative width) padding.
[[nodiscard]] std::string pad(const std::string& text, int width);
// "TP8 CP1 PP4 DP4 VPP1"-style layout string and a one-line scenario summary.
[[nodiscard]] std::string human_duration(double seconds);
// A whole number with thousands separators, rounded: 50000000 -> "50,000,000", -1234.6 -> "-1,235".
[[nodiscard]] std::string grouped(double value);
// A token count with its unit prefix, four significant digits: 1.5e13 -> "15 T", 3e11 -> "300 B",
// 2.5e6 -> "2.5 M", 512 -> "512".
[[nodiscard]] std::string token_count(double tokens);

}  // namespace stepsim::report
