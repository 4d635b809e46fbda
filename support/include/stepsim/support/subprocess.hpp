#pragma once
// Running a function in a fork()ed child process that streams its output back through a pipe.
// The child never returns into the caller's code: it ends with std::_Exit, skipping destructors
// and atexit handlers, so the parent's state (buffers, open files, test framework) is not flushed
// twice. Call it from a single-threaded process.

#include <cstddef>
#include <functional>
#include <stdexcept>
#include <string>
#include <sys/types.h>

#include "stepsim/support/out_of_memory.hpp"

namespace stepsim::support {

// Thrown when a system call of the helper fails (pipe, fork, read, waitpid).
class SubprocessError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// How a child ended.
struct ExitStatus {
  bool exited = false;  // ended by _exit / std::_Exit
  int code = 0;         // its exit code when exited
  int signal = 0;       // the signal that killed it otherwise
  [[nodiscard]] bool ok() const { return exited && code == 0; }
  // Ended by std::bad_alloc in its body (exit status kOutOfMemoryExitCode).
  [[nodiscard]] bool out_of_memory() const { return exited && code == kOutOfMemoryExitCode; }
  // "exited with status N", "ran out of memory (exit status 3)" or "was killed by signal N".
  [[nodiscard]] std::string describe() const;
};

// The body of a child: writes its output to `fd` and returns the exit code. An exception that
// escapes it ends the child with exit code 1; std::bad_alloc with kOutOfMemoryExitCode and one
// line on stderr ("stepsim: error: <what> process: out of memory while ...").
using ChildBody = std::function<int(int fd)>;

// Writes all of `data` to `fd` (retrying on EINTR and short writes); false on an error (errno set).
[[nodiscard]] bool write_all(int fd, const void* data, std::size_t size);

// How the parent and the child talk.
enum class Channel {
  Output,  // a pipe: the child writes, the parent reads
  Duplex,  // a socket pair: both read and write on their end (the child's `fd`, the parent's fd())
};

// A started child and the parent's end of its channel.
class Child {
 public:
  // Flushes stdio, forks, and runs `body` in the child. With `die_with_parent` the child is killed
  // when the parent dies (Linux PR_SET_PDEATHSIG). Throws SubprocessError("<what>: pipe failed: ...").
  Child(const ChildBody& body, const std::string& what, bool die_with_parent = false, Channel channel = Channel::Output);
  ~Child();  // closes the pipe and reaps the child if wait() was not called
  Child(Child&& other) noexcept;
  Child& operator=(Child&&) = delete;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  // The read end of the output pipe (for poll), -1 once the output has ended.
  [[nodiscard]] int fd() const { return fd_; }
  // Appends what one read returns to `out`; false at the end of the output (the pipe is closed).
  bool read_some(std::string& out);
  // Duplex only: sends all of `data` to the child; false when the child has gone (no SIGPIPE).
  bool send(const std::string& data);
  // Duplex only: ends what the child reads (it sees the end of its input); the output stays open.
  void close_input();
  // Reads the output to its end.
  [[nodiscard]] std::string read_to_end();
  // Waits for the child to end (retrying on EINTR).
  ExitStatus wait();

 private:
  std::string what_;
  pid_t pid_ = -1;
  int fd_ = -1;
};

// The output of a child and how it ended.
struct ChildResult {
  std::string output;
  ExitStatus status;
};

// Runs `body` in a child, reads its whole output and waits for it.
[[nodiscard]] ChildResult run_in_child(const ChildBody& body, const std::string& what);

}  // namespace stepsim::support
