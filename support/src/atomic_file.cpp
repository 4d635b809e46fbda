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

bool write_file(const std::string& path, const FileText& f, std::ios::openmode mode) {
  std::vector<char> buffer(std::size_t{1} << 20);
  std::ofstream out;
  out.rdbuf()->pubsetbuf(buffer.data(), static_cast<std::streamsize>(buffer.size()));
  out.open(path, std::ios::binary | mode);
  if (out && f.write) f.write(out);
  else if (out) out << f.text;
  if (out) out.close();
  return static_cast<bool>(out);
}

}  // namespace

namespace {

std::optional<WriteFailure> write_all_files(const std::vector<FileText>& files, std::vector<std::string>& temps) {
  std::vector<Destination> dests;
  const auto discard = [&temps](std::size_t from) {
    for (std::size_t k = from; k < temps.size(); ++k)
      if (!temps[k].empty()) std::remove(temps[k].c_str());
  };
  const auto failure = [&](const std::string& file, WriteFailure::Reason reason, std::string detail = {}) {
    return WriteFailure{file, reason, std::move(detail)};
  };
  // Every check that needs no writing comes first, so that a large file is not written in vain.
  for (std::size_t i = 0; i < files.size(); ++i) {
    for (std::size_t k = 0; k < i; ++k)
      if (files[k].file == files[i].file) return failure(files[i].file, WriteFailure::Reason::NamedTwice);
    std::error_code ec;
    if (fs::is_directory(files[i].file, ec)) return failure(files[i].file, WriteFailure::Reason::IsDirectory);
  }
  for (const auto& f : files) {
    dests.push_back(destination_of(f.file));
    if (dests.back().direct) {
      temps.emplace_back();
      continue;
    }
    remove_stale_temps(dests.back().path);
    temps.push_back(dests.back().path + ".tmp" + std::to_string(::getpid()));
    if (!write_file(temps.back(), f, std::ios::trunc)) {
      discard(0);
      return failure(f.file, WriteFailure::Reason::CannotWrite);
    }
  }
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (dests[i].direct) {
      if (!write_file(dests[i].path, files[i], std::ios::out)) {
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
    temps[i].clear();
  }
  return std::nullopt;
}

}  // namespace

std::optional<WriteFailure> write_files_atomically(const std::vector<FileText>& files) {
  std::vector<std::string> temps;  // temps[i] belongs to files[i]; empty for direct writes and once renamed
  try {
    return write_all_files(files, temps);
  } catch (...) {
    for (const auto& t : temps)
      if (!t.empty()) std::remove(t.c_str());
    throw;
  }
}

}  // namespace stepsim::support
