#pragma once
// Fixed number formatting shared by every writer (deterministic output).

#include <cstdint>
#include <string>

namespace stepsim::report {

// printf-style "%.*f".
std::string fixed(double value, int decimals);
// Bytes as GiB with `decimals` decimals.
std::string gib(std::int64_t bytes, int decimals = 3);
// Right-aligned (positive width) or left-aligned (negative width) padding.
std::string pad(const std::string& text, int width);
// "TP8 CP1 PP4 DP4 VPP1"-style layout string and a one-line scenario summary.
std::string human_duration(double seconds);

}  // namespace stepsim::report
