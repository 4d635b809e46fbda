#pragma once
// The one error hierarchy of stepsim. Libraries throw; only app/ turns an error into a message
// and an exit status (2 for bad input, 3 for internal errors).

#include <stdexcept>
#include <string>

namespace stepsim {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Bad user input. `path` is the JSON path of the offending field ("parallel.tp"), or the file.
class ScenarioError : public Error {
 public:
  ScenarioError(std::string path, const std::string& reason)
      : Error(path + ": " + reason), path_(std::move(path)) {}
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The error of a broken rule, its reason made by `reason()` only when `with_reason` (a sweep's
// enumeration counts the broken rules of thousands of combinations by field and shows one reason).
template <typename Reason>
[[nodiscard]] ScenarioError rule_error(std::string path, bool with_reason, Reason&& reason) {
  return ScenarioError(std::move(path), with_reason ? std::string(reason()) : std::string());
}

// A broken invariant inside stepsim (cyclic step graph, op on a missing rank, ...).
class InternalError : public Error {
 public:
  using Error::Error;
};

}  // namespace stepsim
