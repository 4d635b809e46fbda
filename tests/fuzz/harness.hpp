#pragma once
// Fuzz harnesses of stepsim's input paths. Each harness is one function over arbitrary bytes; the
// contract is that input errors surface as stepsim::ScenarioError and nothing else escapes: any
// other exception, a crash, a sanitizer report or a timeout is a finding. The same functions run
// under libFuzzer (fuzz_<name>, clang with -DSTEPSIM_FUZZ=ON) and in the regression test that
// replays the corpus with the normal build (fuzz_replay).

#include <cstddef>
#include <cstdint>
#include <string>

namespace stepsim::fuzz {

// Scenario JSON text through the loader.
void scenario_text(const std::string& text);
// Sweep JSON text through the parser and, when its raw product of axis sizes is small, the enumeration.
void sweep_text(const std::string& text);
// Lines of `--set` overrides applied to the default scenario, one override per line.
void set_lines(const std::string& text);

// A results file (JSON lines) through `stepsim report`'s reader and report, and through the
// sort and merge of results files with the ranking (in small runs, so that runs are merged).
void results_rows(const std::string& text);

using Harness = void (*)(const std::string&);
// The harness of a corpus folder name ("scenario", "sweep", "set", "rows"), or nullptr.
Harness harness_named(const std::string& name);

}  // namespace stepsim::fuzz
