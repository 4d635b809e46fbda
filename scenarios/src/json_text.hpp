#pragma once
// JSON parsing shared by the scenario and sweep loaders (private to scenarios/src).

#include <string>

#include <nlohmann/json.hpp>

namespace stepsim::scenarios::detail {

// Deepest nesting of objects and arrays accepted in an input document (a scenario needs 4).
inline constexpr int kMaxJsonDepth = 64;

// Parses `text`; a document nested deeper than kMaxJsonDepth, a syntax error becomes ScenarioError(origin, "malformed JSON: ..."), a number
// nlohmann cannot hold (1e400) ScenarioError(origin, "unreadable JSON: number overflow ...").
nlohmann::json parse_json_text(const std::string& text, const std::string& origin);

// "an object", "a string", ... for messages about a value of the wrong type.
const char* json_type_name(const nlohmann::json& j);

// The message of a nlohmann exception without its "[json.exception.x.n] " prefix, after
// "malformed JSON: " (syntax) or "unreadable JSON: " (other errors).
std::string json_error_text(const nlohmann::json::exception& e);

}  // namespace stepsim::scenarios::detail
