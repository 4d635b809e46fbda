#pragma once
// Helpers for end-to-end tests of the stepsim executable.

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>
#include <sys/wait.h>

#include "../common/scratch.hpp"

namespace cli {

struct Result {
  int status = -1;
  std::string out;   // stdout
  std::string err;   // stderr
};

inline std::string tmpdir() { return test_support::scratch_dir("cli").string(); }

using test_support::slurp;

// Runs `stepsim ARGS`; `shell_prefix` goes before it on the shell's command line ("ulimit -v N; ").
inline Result run(const std::string& args, const std::string& shell_prefix = "") {
  static int n = 0;  // one counter per test executable is enough: names only need to differ
  const std::string err_file = tmpdir() + "/err" + std::to_string(n++);
  const std::string cmd = shell_prefix + std::string(STEPSIM_BINARY_DIR) + "/app/stepsim " + args + " 2>" + err_file;
  Result r;
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::array<char, 4096> buf{};
  std::size_t got = 0;
  while ((got = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), got);
  const int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.err = slurp(err_file);
  return r;
}

inline std::string write_file(const std::string& name, const std::string& text) {
  return test_support::scratch_file("cli", name, text);
}

// Files of `dir` whose names start with `prefix` (targets and their temporary files).
inline std::vector<std::string> files_starting(const std::string& dir, const std::string& prefix) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.path().filename().string().rfind(prefix, 0) == 0) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// A fresh, empty directory under tmpdir().
inline std::string empty_dir(const std::string& name) { return test_support::fresh_dir("cli", name).string(); }

// A user error: exit status 2, nothing on stdout, one line on stderr containing `expect`, and
// neither `out` nor a temporary file next to it left behind.
inline void check_user_error(const Result& r, const std::string& expect, const std::string& out) {
  CHECK(r.status == 2);
  CHECK(r.out.empty());
  CHECK(r.err.find(expect) != std::string::npos);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  const std::filesystem::path target(out);
  CHECK(files_starting(target.parent_path().string(), target.filename().string()).empty());
}

}  // namespace cli
