#pragma once
// `stepsim memory` output: the paper's estimate next to stepsim's per-stage breakdown.

#include <string>

#include "stepsim/memory/estimator.hpp"
#include "stepsim/scenarios/scenario.hpp"

namespace stepsim::report {

// One line naming the scenario: model, cluster, layout, batch and schedule.
[[nodiscard]] std::string scenario_summary(const scenarios::Scenario& s);

[[nodiscard]] std::string memory_table(const scenarios::Scenario& s, const memory::PaperEstimate& paper,
                         const memory::StepsimEstimate& est);
[[nodiscard]] std::string memory_json(const scenarios::Scenario& s, const memory::PaperEstimate& paper,
                        const memory::StepsimEstimate& est);

}  // namespace stepsim::report
