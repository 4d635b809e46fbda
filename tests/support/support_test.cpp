// support/: a child's output and exit status; all-or-none file writes; running out of memory.
#include <doctest/doctest.h>

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <new>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/scratch.hpp"
#include "stepsim/support/atomic_file.hpp"
#include "stepsim/support/heap.hpp"
#include "stepsim/support/out_of_memory.hpp"
#include "stepsim/support/subprocess.hpp"

namespace {

namespace su = stepsim::support;

using test_support::slurp;

std::string tmp_dir(const std::string& name) { return test_support::fresh_dir("support", name).string(); }

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

TEST_CASE("a child that runs out of memory exits with status 3 and says what it was doing") {
  const auto oom = su::run_in_child(
      [](int fd) -> int {
        ::dup2(fd, STDERR_FILENO);  // its stderr line comes back as its output
        const su::Activity outer("simulating a step");
        const su::Activity inner("replaying micro-batch 7");
        throw std::bad_alloc();
      },
      "worker");
  CHECK(oom.status.exited);
  CHECK(oom.status.code == su::kOutOfMemoryExitCode);
  CHECK(oom.status.code == 3);
  CHECK(oom.status.out_of_memory());
  CHECK(oom.status.describe() == "ran out of memory (exit status 3)");
  CHECK(oom.output.rfind("stepsim: error: worker process: out of memory while replaying micro-batch 7; make the run smaller (", 0) == 0);
  CHECK(oom.output.find("--memory-budget-gib") != std::string::npos);
  CHECK(std::count(oom.output.begin(), oom.output.end(), '\n') == 1);
  CHECK(oom.output.back() == '\n');
  // Status 3 from a body that returns it is no different: the convention is the exit code.
  CHECK_FALSE(su::run_in_child([](int) { return 7; }, "test").status.out_of_memory());
}

TEST_CASE("Activity: the innermost in scope is current, each restores the one before") {
  CHECK(su::current_activity().empty());
  {
    const su::Activity a("loading");
    CHECK(su::current_activity() == "loading");
    {
      const su::Activity b("simulating");
      CHECK(su::current_activity() == "simulating");
    }
    CHECK(su::current_activity() == "loading");
  }
  CHECK(su::current_activity().empty());
}

TEST_CASE("write_files_atomically: streamed content, and a writer that throws leaves no file") {
  const auto dir = tmp_dir("stream");
  const std::string a = dir + "/a.txt", b = dir + "/b.txt";
  const su::ContentWriter counting = [](std::ostream& out) {
    for (int i = 0; i < 3; ++i) out << i << ',';
  };
  CHECK_FALSE(su::write_files_atomically({{a, counting}, {b, "text"}}).has_value());
  CHECK(slurp(a) == "0,1,2,");
  CHECK(slurp(b) == "text");
  const su::ContentWriter failing = [](std::ostream& out) {
    out << "partial";
    throw std::bad_alloc();
  };
  CHECK_THROWS_AS((void)su::write_files_atomically({{b, "newer"}, {a, failing}}), std::bad_alloc);
  CHECK(slurp(a) == "0,1,2,");  // untouched, and no temporary next to it
  CHECK(slurp(b) == "text");
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"a.txt", "b.txt"});
  // Written in place through a special file, streamed too.
  CHECK_FALSE(su::write_files_atomically({{"/dev/null", counting}}).has_value());
}

TEST_CASE("Activity: the innermost one an exception ended is named after it is gone, until another begins") {
  try {
    const su::Activity a("simulating");
    const su::Activity b("building the step graph");
    throw std::bad_alloc();
  } catch (const std::bad_alloc&) {
    CHECK(su::current_activity() == "building the step graph");
  }
  const su::Activity c("writing the trace");
  CHECK(su::current_activity() == "writing the trace");
}

TEST_CASE("reserve_huge_page_heap: the heap grows by the pad, its 2 MiB pages are advised, blocks start there") {
  // In a child: the reservation changes the process's malloc for good.
  const auto child = su::run_in_child(
      [](int fd) {
        constexpr std::size_t pad = std::size_t{8} << 20;
        const auto heap = su::reserve_huge_page_heap(pad);
        void* block = std::malloc(std::size_t{3} << 20);  // below the 32 MiB threshold: from the heap
        const auto at = reinterpret_cast<std::uintptr_t>(block);
        // The advice as the kernel records it: "hg" in the VmFlags of the mapping that holds the block.
        bool advised_mapping = false;
        std::ifstream smaps("/proc/self/smaps");
        std::uintptr_t lo = 0, hi = 0;
        for (std::string line; std::getline(smaps, line);) {
          const auto dash = line.find('-');
          const auto space = line.find(' ');
          if (dash != std::string::npos && space != std::string::npos && dash < space &&
              line.find_first_not_of("0123456789abcdef") == dash) {
            lo = std::stoull(line.substr(0, dash), nullptr, 16);
            hi = std::stoull(line.substr(dash + 1, space - dash - 1), nullptr, 16);
          } else if (line.rfind("VmFlags:", 0) == 0 && lo <= at && at < hi) {
            advised_mapping = line.find(" hg") != std::string::npos;
          }
        }
        std::ostringstream out;
        out << heap.heap_grown_bytes << ' ' << heap.advised_bytes << ' ' << (heap.advised_begin % (2u << 20)) << ' '
            << (at >= heap.advised_begin && at < heap.advised_begin + heap.advised_bytes) << ' ' << advised_mapping;
        std::free(block);
        const std::string text = out.str();
        return su::write_all(fd, text.data(), text.size()) ? 0 : 5;
      },
      "test");
  REQUIRE(child.status.ok());
  std::istringstream in(child.output);
  std::size_t grown = 0, advised = 0, misalignment = 1;
  bool block_inside = false, advised_mapping = false;
  in >> grown >> advised >> misalignment >> block_inside >> advised_mapping;
  REQUIRE_FALSE(in.fail());
  if (grown == 0) {
    // Not glibc's heap (a sanitizer's allocator): nothing was changed or advised.
    CHECK(advised == 0);
    return;
  }
  CHECK(grown >= (std::size_t{8} << 20));
  // Transparent huge pages on request: "[madvise]" or "[always]" in the kernel's setting.
  std::ifstream thp_setting("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string thp;
  std::getline(thp_setting, thp);
  if (thp.find("[madvise]") == std::string::npos && thp.find("[always]") == std::string::npos) return;
  CHECK(advised % (2u << 20) == 0);
  CHECK(advised >= (std::size_t{4} << 20));
  CHECK(misalignment == 0);
  CHECK(block_inside);
  CHECK(advised_mapping);
}
