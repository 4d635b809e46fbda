#include "stepsim/report/format.hpp"

#include <cstdio>
#include <utility>
#include <vector>

namespace stepsim::report {

std::string significant(double value, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, value);
  return buf;
}

std::string fixed(double value, int decimals) {
  if (value == 0) value = 0;  // no "-0.000"
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  std::string s = buf;
  if (s.rfind("-0.", 0) == 0 && s.find_first_not_of("-0.") == std::string::npos) s.erase(0, 1);
  return s;
}

std::string gib(std::int64_t bytes, int decimals) {
  return fixed(static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0), decimals);
}

std::string pad(const std::string& text, int width) {
  const auto w = static_cast<std::size_t>(width < 0 ? -width : width);
  if (text.size() >= w) return text;
  const std::string fill(w - text.size(), ' ');
  return width < 0 ? text + fill : fill + text;
}

std::string human_duration(double seconds) {
  if (seconds < 1e-3) return fixed(seconds * 1e6, 1) + " us";
  if (seconds < 1.0) return fixed(seconds * 1e3, 2) + " ms";
  if (seconds < 120.0) return fixed(seconds, 3) + " s";
  if (seconds < 7200.0) return fixed(seconds / 60.0, 1) + " min";
  if (seconds < 3.0 * 86400.0) return fixed(seconds / 3600.0, 1) + " h";
  return fixed(seconds / 86400.0, 1) + " days";
}

std::string grouped(double value) {
  const std::string digits = fixed(value, 0);
  const std::size_t sign = !digits.empty() && digits[0] == '-' ? 1 : 0;
  std::string out = digits.substr(0, sign);
  for (std::size_t i = sign; i < digits.size(); ++i) {
    if (i > sign && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string token_count(double tokens) {
  static constexpr std::pair<double, const char*> kPrefixes[] = {{1e12, " T"}, {1e9, " B"}, {1e6, " M"}, {1e3, " K"}};
  for (const auto& [scale, prefix] : kPrefixes)
    if (tokens >= scale) return significant(tokens / scale, 4) + prefix;
  return significant(tokens, 4);
}

}  // namespace stepsim::report
