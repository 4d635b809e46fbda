#pragma once
// Looking kernels up by name in the costmodel tests.

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "stepsim/costmodel/compute.hpp"
#include "stepsim/workload/kernels.hpp"
#include "stepsim/workload/shape.hpp"

namespace test_support {

inline const stepsim::workload::Kernel& find(const std::vector<stepsim::workload::Kernel>& ks, const std::string& name) {
  const auto it = std::find_if(ks.begin(), ks.end(), [&](const stepsim::workload::Kernel& k) { return k.name == name; });
  REQUIRE_MESSAGE(it != ks.end(), "no kernel " << name);
  return *it;
}

inline bool has(const std::vector<stepsim::workload::Kernel>& ks, const std::string& name) {
  return std::any_of(ks.begin(), ks.end(), [&](const stepsim::workload::Kernel& k) { return k.name == name; });
}

}  // namespace test_support
