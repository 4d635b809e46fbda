#pragma once
// Plugins: shared objects that stepsim loads (dlopen) only when a command needs them, so that the
// executable and its other commands never load the libraries behind them (SimGrid, MPI).

#include <string>

namespace stepsim::support {

// The file of a plugin: `file_name` next to the running executable (/proc/self/exe) when it is
// there, else `build_tree_path` (where the build puts it, for programs outside app/: tests, benchmarks).
[[nodiscard]] std::string plugin_path(const std::string& file_name, const std::string& build_tree_path);

}  // namespace stepsim::support
