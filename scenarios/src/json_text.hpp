#pragma once
// JSON parsing shared by the scenario and sweep loaders (private to scenarios/src).

#include <string>

#include <nlohmann/json.hpp>

namespace stepsim::scenarios::detail {

// Parses `text`; a syntax error becomes ScenarioError(origin, "malformed JSON: ...").
nlohmann::json parse_json_text(const std::string& text, const std::string& origin);

}  // namespace stepsim::scenarios::detail
