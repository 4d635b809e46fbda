#pragma once
// Running out of memory: std::bad_alloc ends a stepsim process with exit status 3 and one line
// on stderr saying what was being done and how to make the run smaller, never std::terminate.
// What is being done is named by an Activity in scope (innermost wins), or, once an exception has
// unwound the activities, by the innermost one it ended.

#include <string>

namespace stepsim::support {

// The exit status of a process (the command line, a worker) that ran out of memory.
inline constexpr int kOutOfMemoryExitCode = 3;

// Names what the process is doing while it is in scope ("simulating the step (2,400,000 ops)"),
// for the out-of-memory message. Activities nest; each restores the previous one when it ends.
class Activity {
 public:
  explicit Activity(std::string what);
  ~Activity();
  Activity(const Activity&) = delete;
  Activity& operator=(const Activity&) = delete;
  [[nodiscard]] const std::string& what() const { return what_; }

 private:
  std::string what_;
  const Activity* previous_;
  int exceptions_;  // std::uncaught_exceptions() when it began
};

// What the innermost Activity in scope names; when none is, the innermost one that the exception
// being handled ended (until another activity begins); else empty.
[[nodiscard]] std::string current_activity();

// Writes "<prefix>out of memory while <activity>; make the run smaller (...)\n" to stderr
// without allocating (the line is built in a fixed buffer), for the handlers of std::bad_alloc.
void report_out_of_memory(const char* prefix) noexcept;

}  // namespace stepsim::support
