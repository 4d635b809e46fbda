// Replays fuzz corpora with the normal build: `fuzz_replay DIR...`, where each DIR is
// tests/fuzz/corpus/<harness>. Every file goes through its harness; an escaping exception or a
// crash fails the run. Prints "N passed, 0 failed" per corpus.
#include <algorithm>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "harness.hpp"

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  int failed = 0;
  for (int i = 1; i < argc; ++i) {
    const fs::path dir(argv[i]);
    const auto harness = stepsim::fuzz::harness_named(dir.filename().string());
    if (harness == nullptr || !fs::is_directory(dir)) {
      std::cerr << "fuzz_replay: " << dir << " is not a corpus folder of a known harness\n";
      return 2;
    }
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_regular_file()) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    int passed = 0;
    for (const auto& f : files) {
      std::ifstream in(f, std::ios::binary);
      std::ostringstream text;
      text << in.rdbuf();
      try {
        harness(text.str());
        ++passed;
      } catch (const std::exception& e) {
        ++failed;
        std::cerr << f.string() << ": escaped exception: " << e.what() << "\n";
      }
    }
    std::cout << dir.filename().string() << ": " << passed << " passed, " << (files.size() - static_cast<std::size_t>(passed))
              << " failed\n";
  }
  return failed == 0 ? 0 : 1;
}
