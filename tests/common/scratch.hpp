#pragma once
// Scratch files for tests: folders of this test process under the system's temporary folder,
// and the whole content of a file. Each test process has its own folders (the process id is in
// their names), so suites that ctest runs in parallel never share one.

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace test_support {

// <temp>/stepsim_<suite>_<pid>, created when missing.
inline std::filesystem::path scratch_dir(const std::string& suite) {
  const auto dir = std::filesystem::temp_directory_path() / ("stepsim_" + suite + "_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

// scratch_dir(suite) / name with nothing there (what was is removed): for a folder that the
// code under test creates itself.
inline std::filesystem::path fresh_path(const std::string& suite, const std::string& name) {
  const auto path = scratch_dir(suite) / name;
  std::filesystem::remove_all(path);
  return path;
}

// scratch_dir(suite) / name, an empty folder.
inline std::filesystem::path fresh_dir(const std::string& suite, const std::string& name) {
  const auto dir = fresh_path(suite, name);
  std::filesystem::create_directories(dir);
  return dir;
}

// scratch_dir(suite) / name holding `text`; returns its path.
inline std::string scratch_file(const std::string& suite, const std::string& name, const std::string& text) {
  const auto file = scratch_dir(suite) / name;
  std::ofstream(file, std::ios::binary) << text;
  return file.string();
}

// The bytes of `file` ("" when it cannot be read).
inline std::string slurp(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace test_support
