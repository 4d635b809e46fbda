#pragma once
// `stepsim memory` output: the paper's estimate next to stepsim's per-stage breakdown.

#include <string>

#include "stepsim/memory/estimator.hpp"
#include "stepsim/scenarios/scenario.hpp"

namespace stepsim::report {

// One line naming the scenario: model, cluster, layout, batch and schedule.
[[nodiscard]] std::string scenario_summary(const scenarios::Scenario& s);

// The paper's terms of the first stage with its verdict (total <= memory.usable_fraction x GPU
// memory); stepsim's terms of the first, middle, last and peak stages (named in the table's
// heading), the peak, and with memory.headroom_gib > 0 the stepsim prune rule's verdict.
[[nodiscard]] std::string memory_table(const scenarios::Scenario& s, const memory::PaperEstimate& paper,
                         const memory::StepsimEstimate& est);
// The same with every stage: "paper" {..., usable_fraction, under_usable_fraction}, "stepsim"
// {peak_stage, peak_bytes, gpu_memory_bytes, fits, headroom_bytes, fits_with_headroom}, "stages".
[[nodiscard]] std::string memory_json(const scenarios::Scenario& s, const memory::PaperEstimate& paper,
                        const memory::StepsimEstimate& est);

}  // namespace stepsim::report
