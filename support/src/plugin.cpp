#include "stepsim/support/plugin.hpp"

#include <filesystem>
#include <system_error>

namespace stepsim::support {

std::string plugin_path(const std::string& file_name, const std::string& build_tree_path) {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const auto next_to = exe.parent_path() / file_name;
    if (std::filesystem::exists(next_to, ec)) return next_to.string();
  }
  return build_tree_path;
}

}  // namespace stepsim::support
