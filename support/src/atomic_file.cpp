#include "stepsim/support/atomic_file.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <unistd.h>

namespace stepsim::support {

std::optional<WriteFailure> write_files_atomically(const std::vector<FileText>& files) {
  std::vector<std::string> temps;  // temps[i] belongs to files[i]
  const auto discard = [&temps](std::size_t from) {
    for (std::size_t k = from; k < temps.size(); ++k) std::remove(temps[k].c_str());
  };
  const auto failure = [&](const std::string& file, WriteFailure::Reason reason, std::string detail = {}) {
    return WriteFailure{file, reason, std::move(detail)};
  };
  for (std::size_t i = 0; i < files.size(); ++i) {
    const auto& f = files[i];
    for (std::size_t k = 0; k < i; ++k)
      if (files[k].file == f.file) {
        discard(0);
        return failure(f.file, WriteFailure::Reason::NamedTwice);
      }
    const std::string tmp = f.file + ".tmp" + std::to_string(::getpid());
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (out) temps.push_back(tmp);
    if (out) out << f.text;
    if (out) out.close();
    if (!out) {
      discard(0);
      return failure(f.file, WriteFailure::Reason::CannotWrite);
    }
  }
  for (const auto& f : files) {
    std::error_code ec;
    if (std::filesystem::is_directory(f.file, ec)) {
      discard(0);
      return failure(f.file, WriteFailure::Reason::IsDirectory);
    }
  }
  for (std::size_t i = 0; i < files.size(); ++i) {
    std::error_code ec;
    std::filesystem::rename(temps[i], files[i].file, ec);
    if (ec) {
      discard(i);
      return failure(files[i].file, WriteFailure::Reason::CannotRename, ec.message());
    }
  }
  return std::nullopt;
}

}  // namespace stepsim::support
