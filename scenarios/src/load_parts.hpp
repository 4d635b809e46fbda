#pragma once
// The scenario loader in its two parts (private to scenarios/src): reading the fields, then the
// cross-field rules. load_scenario_text is the first then the second; the sweep enumeration reads
// a scenario once and checks many layouts of it with the second alone.

#include <optional>
#include <string>
#include <vector>

#include "stepsim/scenarios/error.hpp"
#include "stepsim/scenarios/load.hpp"
#include "stepsim/scenarios/scenario.hpp"

namespace stepsim::scenarios::detail {

// Reads every field (ScenarioError for a malformed one) without the cross-field rules; `dp_given`
// tells whether the input sets parallel.dp.
[[nodiscard]] Scenario read_scenario(const std::string& json_text, const std::vector<Override>& overrides, const std::string& origin,
                                     bool& dp_given);

// The error of the first cross-field rule `s` breaks (what load_scenario_text throws), or nullopt;
// sets parallel.dp to world / (tp cp pp) when it was not given. No exception is thrown. Without
// `messages` the error names the field only (its reason empty; the memory-size rules keep theirs).
[[nodiscard]] std::optional<ScenarioError> cross_field_error(Scenario& s, bool dp_given, bool messages = true);

}  // namespace stepsim::scenarios::detail
