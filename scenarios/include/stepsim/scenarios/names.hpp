#pragma once
// One table of names per enumeration: the loader parses with it, to_string prints with it, and
// sweeps and messages list its names from it, so that a name is written once.

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

namespace stepsim::scenarios {

template <typename E>
struct NamedValue {
  std::string_view name;
  E value;
};

template <typename E, std::size_t N>
using NameTable = std::array<NamedValue<E>, N>;

// The name of `value` in `table`, "?" when it has none.
template <typename E, std::size_t N>
[[nodiscard]] std::string name_of(const NameTable<E, N>& table, E value) {
  for (const auto& entry : table)
    if (entry.value == value) return std::string(entry.name);
  return "?";
}

}  // namespace stepsim::scenarios
