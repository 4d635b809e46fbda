#pragma once
// Looking kernels up by name in the costmodel tests.

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "stepsim/costmodel/compute.hpp"

namespace test_support {

inline const stepsim::costmodel::Kernel& find(const std::vector<stepsim::costmodel::Kernel>& ks, const std::string& name) {
  const auto it = std::find_if(ks.begin(), ks.end(), [&](const stepsim::costmodel::Kernel& k) { return k.name == name; });
  REQUIRE_MESSAGE(it != ks.end(), "no kernel " << name);
  return *it;
}

inline bool has(const std::vector<stepsim::costmodel::Kernel>& ks, const std::string& name) {
  return std::any_of(ks.begin(), ks.end(), [&](const stepsim::costmodel::Kernel& k) { return k.name == name; });
}

}  // namespace test_support
