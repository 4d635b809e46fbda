#include "stepsim/support/out_of_memory.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <utility>

#include <unistd.h>

namespace stepsim::support {

namespace {

thread_local const Activity* g_current = nullptr;
// The innermost activity that an exception ended (its destructor ran while unwinding), for the
// handler that catches the exception after the activity is gone; cleared when an activity starts.
thread_local char g_ended_by_exception[512] = "";

constexpr const char* kHint =
    "; make the run smaller (fewer micro-batches: a larger training.micro_batch or a smaller training.global_batch; "
    "--granularity chunk; fewer GPUs; --engine analytic), or set --memory-budget-gib below this machine's free memory "
    "to have such runs refused up front";

}  // namespace

Activity::Activity(std::string what)
    : what_(std::move(what)), previous_(g_current), exceptions_(std::uncaught_exceptions()) {
  g_current = this;
  g_ended_by_exception[0] = '\0';
}

Activity::~Activity() {
  g_current = previous_;
  if (std::uncaught_exceptions() > exceptions_ && g_ended_by_exception[0] == '\0') {
    const auto n = std::min(what_.size(), sizeof g_ended_by_exception - 1);
    std::memcpy(g_ended_by_exception, what_.data(), n);
    g_ended_by_exception[n] = '\0';
  }
}

std::string current_activity() {
  if (g_current != nullptr) return g_current->what();
  return g_ended_by_exception;
}

void report_out_of_memory(const char* prefix) noexcept {
  char line[1024];
  const char* what = g_current != nullptr ? g_current->what().c_str() : g_ended_by_exception;
  const int n = std::snprintf(line, sizeof line, "%sout of memory%s%s%s\n", prefix, *what != '\0' ? " while " : "", what, kHint);
  if (n <= 0) return;
  const auto len = std::min(static_cast<std::size_t>(n), sizeof line - 1);
  line[len - 1] = '\n';  // a cut line still ends as one
  const ssize_t written = ::write(STDERR_FILENO, line, len);
  (void)written;
}

}  // namespace stepsim::support
