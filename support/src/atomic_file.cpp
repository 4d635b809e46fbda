#include "stepsim/support/atomic_file.hpp"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <sys/types.h>
#include <unistd.h>

namespace stepsim::support {

namespace fs = std::filesystem;

namespace {

// Where a target's text goes: a regular file (or a new path) is replaced by renaming a temporary
// onto it — through its symlinks, so that a link stays a link; anything else (a device such as
// /dev/null, a FIFO, /dev/stdout) is written in place, since renaming over it would replace it.
struct Destination {
  std::string path;     // the file written or renamed onto (symlinks resolved)
  bool direct = false;  // written in place, no temporary
};

Destination destination_of(const std::string& file) {
  std::error_code ec;
  const auto st = fs::status(file, ec);  // follows symlinks
  if (!ec && fs::exists(st) && !fs::is_regular_file(st) && !fs::is_directory(st)) return {file, true};
  if (fs::is_symlink(fs::symlink_status(file, ec))) {
    const auto resolved = fs::weakly_canonical(file, ec);
    if (!ec) return {resolved.string(), false};
  }
  return {file, false};
}

// Removes "<file>.tmp<pid>" files left by processes that no longer run (killed while writing).
void remove_stale_temps(const std::string& file) {
  const fs::path target(file);
  const std::string prefix = target.filename().string() + ".tmp";
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string pid_text = name.substr(prefix.size());
    if (pid_text.find_first_not_of("0123456789") != std::string::npos || pid_text.size() > 9) continue;
    const auto pid = static_cast<pid_t>(std::stol(pid_text));
    if (pid != ::getpid() && ::kill(pid, 0) != 0 && errno == ESRCH) {
      std::error_code rm;
      fs::remove(it->path(), rm);
    }
  }
}

bool write_text(const std::string& path, const std::string& text, std::ios::openmode mode) {
  std::ofstream out(path, std::ios::binary | mode);
  if (out) out << text;
  if (out) out.close();
  return static_cast<bool>(out);
}

}  // namespace

std::optional<WriteFailure> write_files_atomically(const std::vector<FileText>& files) {
  std::vector<Destination> dests;
  std::vector<std::string> temps;  // temps[i] belongs to files[i]; empty for direct writes
  const auto discard = [&temps](std::size_t from) {
    for (std::size_t k = from; k < temps.size(); ++k)
      if (!temps[k].empty()) std::remove(temps[k].c_str());
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
    dests.push_back(destination_of(f.file));
    if (dests.back().direct) {
      temps.emplace_back();
      continue;
    }
    remove_stale_temps(dests.back().path);
    const std::string tmp = dests.back().path + ".tmp" + std::to_string(::getpid());
    const bool ok = write_text(tmp, f.text, std::ios::trunc);
    temps.push_back(ok ? tmp : std::string());
    if (!ok) {
      std::remove(tmp.c_str());
      discard(0);
      return failure(f.file, WriteFailure::Reason::CannotWrite);
    }
  }
  for (const auto& f : files) {
    std::error_code ec;
    if (fs::is_directory(f.file, ec)) {
      discard(0);
      return failure(f.file, WriteFailure::Reason::IsDirectory);
    }
  }
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (dests[i].direct) {
      if (!write_text(dests[i].path, files[i].text, std::ios::out)) {
        discard(i);
        return failure(files[i].file, WriteFailure::Reason::CannotWrite);
      }
      continue;
    }
    std::error_code ec;
    fs::rename(temps[i], dests[i].path, ec);
    if (ec) {
      discard(i);
      return failure(files[i].file, WriteFailure::Reason::CannotRename, ec.message());
    }
  }
  return std::nullopt;
}

}  // namespace stepsim::support
