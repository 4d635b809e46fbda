#include "stepsim/support/subprocess.hpp"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <new>
#include <utility>

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "stepsim/support/out_of_memory.hpp"

namespace stepsim::support {

namespace {

[[noreturn]] void fail(const std::string& what, const char* call) {
  throw SubprocessError(what + ": " + call + " failed: " + std::strerror(errno));
}

}  // namespace

std::string ExitStatus::describe() const {
  if (out_of_memory()) return "ran out of memory (exit status " + std::to_string(code) + ")";
  return exited ? "exited with status " + std::to_string(code) : "was killed by signal " + std::to_string(signal);
}

bool write_all(int fd, const void* data, std::size_t size) {
  const auto* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t w = ::write(fd, p, size);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += w;
    size -= static_cast<std::size_t>(w);
  }
  return true;
}

Child::Child(const ChildBody& body, const std::string& what, bool die_with_parent, Channel channel) : what_(what) {
  int fds[2];
  if (channel == Channel::Duplex) {
    if (::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) fail(what_, "socketpair()");
  } else if (::pipe(fds) != 0) {
    fail(what_, "pipe()");
  }
  // Buffered output would otherwise be written twice, once by each process.
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ < 0) {
    const int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    errno = err;
    fail(what_, "fork()");
  }
  if (pid_ == 0) {
    ::close(fds[0]);
    if (die_with_parent) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) std::_Exit(1);
    }
    int code = 1;
    try {
      code = body(fds[1]);
    } catch (const std::bad_alloc&) {
      char prefix[160];
      std::snprintf(prefix, sizeof prefix, "stepsim: error: %s process: ", what_.c_str());
      report_out_of_memory(prefix);
      code = kOutOfMemoryExitCode;
    } catch (...) {
      code = 1;
    }
    ::close(fds[1]);
    std::_Exit(code);
  }
  ::close(fds[1]);
  fd_ = fds[0];
}

Child::Child(Child&& other) noexcept
    : what_(std::move(other.what_)), pid_(std::exchange(other.pid_, -1)), fd_(std::exchange(other.fd_, -1)) {}

Child::~Child() {
  if (fd_ >= 0) ::close(fd_);
  if (pid_ > 0)
    while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
}

bool Child::read_some(std::string& out) {
  if (fd_ < 0) return false;
  char buf[1 << 16];
  for (;;) {
    const ssize_t r = ::read(fd_, buf, sizeof buf);
    if (r < 0) {
      if (errno == EINTR) continue;
      fail(what_, "reading from the child");
    }
    if (r == 0) {
      ::close(fd_);
      fd_ = -1;
      return false;
    }
    out.append(buf, static_cast<std::size_t>(r));
    return true;
  }
}

bool Child::send(const std::string& data) {
  const char* p = data.data();
  std::size_t left = data.size();
  while (left > 0 && fd_ >= 0) {
    const ssize_t w = ::send(fd_, p, left, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += w;
    left -= static_cast<std::size_t>(w);
  }
  return left == 0;
}

void Child::close_input() {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_WR);
}

std::string Child::read_to_end() {
  std::string data;
  while (read_some(data)) {
  }
  return data;
}

ExitStatus Child::wait() {
  if (pid_ <= 0) throw SubprocessError(what_ + ": no child to wait for");
  int st = 0;
  while (::waitpid(pid_, &st, 0) < 0)
    if (errno != EINTR) fail(what_, "waitpid()");
  pid_ = -1;
  ExitStatus s;
  s.exited = WIFEXITED(st);
  s.code = s.exited ? WEXITSTATUS(st) : 0;
  s.signal = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
  return s;
}

ChildResult run_in_child(const ChildBody& body, const std::string& what) {
  Child child(body, what);
  ChildResult r;
  r.output = child.read_to_end();
  r.status = child.wait();
  return r;
}

}  // namespace stepsim::support
