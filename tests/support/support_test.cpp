// support/: a child's output and exit status; all-or-none file writes.
#include <doctest/doctest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "stepsim/support/atomic_file.hpp"
#include "stepsim/support/subprocess.hpp"

namespace {

namespace su = stepsim::support;

std::string slurp(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string tmp_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("stepsim-support-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

}  // namespace

TEST_CASE("run_in_child: the output comes back, the exit status or signal is reported") {
  const auto ok = su::run_in_child(
      [](int fd) {
        const std::string big(200000, 'x');  // more than a pipe buffer
        return su::write_all(fd, big.data(), big.size()) ? 0 : 5;
      },
      "test");
  CHECK(ok.output == std::string(200000, 'x'));
  CHECK(ok.status.ok());

  const auto failed = su::run_in_child([](int) { return 7; }, "test");
  CHECK_FALSE(failed.status.ok());
  CHECK(failed.status.describe() == "exited with status 7");

  const auto thrown = su::run_in_child([](int) -> int { throw std::runtime_error("x"); }, "test");
  CHECK(thrown.status.describe() == "exited with status 1");

  const auto killed = su::run_in_child(
      [](int) {
        std::raise(SIGKILL);
        return 0;
      },
      "test");
  CHECK(killed.status.describe() == "was killed by signal " + std::to_string(SIGKILL));
}

TEST_CASE("write_files_atomically: every file or none") {
  const auto dir = tmp_dir("atomic");
  const std::string a = dir + "/a.txt", b = dir + "/b.txt";
  CHECK_FALSE(su::write_files_atomically({{a, "one"}, {b, "two"}}).has_value());
  CHECK(slurp(a) == "one");
  CHECK(slurp(b) == "two");

  const auto twice = su::write_files_atomically({{a, "new"}, {a, "newer"}});
  REQUIRE(twice.has_value());
  CHECK(twice->reason == su::WriteFailure::Reason::NamedTwice);
  CHECK(slurp(a) == "one");

  std::filesystem::create_directories(dir + "/sub");
  const auto on_dir = su::write_files_atomically({{a, "new"}, {dir + "/sub", "x"}});
  REQUIRE(on_dir.has_value());
  CHECK(on_dir->reason == su::WriteFailure::Reason::IsDirectory);
  CHECK(on_dir->file == dir + "/sub");
  CHECK(slurp(a) == "one");

  const auto missing = su::write_files_atomically({{a, "new"}, {dir + "/no/such/dir/c.txt", "x"}});
  REQUIRE(missing.has_value());
  CHECK(missing->reason == su::WriteFailure::Reason::CannotWrite);
  CHECK(slurp(a) == "one");
  std::size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) files += e.is_regular_file() ? 1 : 0;
  CHECK(files == 2);  // no temporary file left behind
  std::filesystem::remove_all(dir);
}

TEST_CASE("write_files_atomically: through symlinks and special files, never replacing them") {
  const auto dir = tmp_dir("special");
  const std::string real = dir + "/real.txt", link = dir + "/link.txt";
  {
    std::ofstream(real) << "old";
  }
  std::filesystem::create_symlink(real, link);
  CHECK_FALSE(su::write_files_atomically({{link, "through the link"}}).has_value());
  CHECK(std::filesystem::is_symlink(link));
  CHECK(slurp(real) == "through the link");

  // A character device is written in place, not replaced by a regular file.
  CHECK_FALSE(su::write_files_atomically({{"/dev/null", "discarded"}, {dir + "/b.txt", "kept"}}).has_value());
  CHECK(std::filesystem::is_character_file("/dev/null"));
  CHECK(slurp(dir + "/b.txt") == "kept");

  // A FIFO gets the text through the pipe.
  const std::string fifo = dir + "/fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::string got;
  const pid_t reader = ::fork();
  REQUIRE(reader >= 0);
  if (reader == 0) {
    std::ofstream(dir + "/from-fifo.txt") << slurp(fifo);
    ::_exit(0);
  }
  CHECK_FALSE(su::write_files_atomically({{fifo, "piped"}}).has_value());
  int status = 0;
  ::waitpid(reader, &status, 0);
  CHECK(slurp(dir + "/from-fifo.txt") == "piped");
  CHECK(std::filesystem::is_fifo(fifo));
  std::filesystem::remove_all(dir);
}

TEST_CASE("write_files_atomically: temporaries of processes that no longer run are removed") {
  const auto dir = tmp_dir("stale");
  const std::string out = dir + "/out.txt";
  // A pid that cannot run: above the kernel's limit (4,194,304).
  const std::string stale = out + ".tmp999999999";
  std::ofstream(stale) << "left by a killed run";
  const std::string own = out + ".tmp" + std::to_string(::getppid());  // a live process: kept
  std::ofstream(own) << "in use";
  CHECK_FALSE(su::write_files_atomically({{out, "fresh"}}).has_value());
  CHECK_FALSE(std::filesystem::exists(stale));
  CHECK(std::filesystem::exists(own));
  CHECK(slurp(out) == "fresh");
  std::filesystem::remove_all(dir);
}
