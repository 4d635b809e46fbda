// The MPI plugin (see mpi_plugin.hpp): MPI_COMM_WORLD, one tag, non-blocking sends whose
// buffers are kept until MPI is done with them, so that two ranks sending to each other at once
// never wait on each other.

#include "mpi_plugin.hpp"

#include <mpi.h>

#include <climits>
#include <cstring>
#include <deque>
#include <new>
#include <string>

namespace stepsim::driver {

namespace {

constexpr int kTag = 1;

struct Pending {
  MPI_Request request = MPI_REQUEST_NULL;
  std::string data;
};
std::deque<Pending> pending;  // a deque: its elements do not move while MPI holds their buffers

int progress() {
  while (!pending.empty()) {
    int done = 0;
    if (const int rc = MPI_Test(&pending.front().request, &done, MPI_STATUS_IGNORE); rc != MPI_SUCCESS) return rc;
    if (done == 0) break;
    pending.pop_front();
  }
  return MPI_SUCCESS;
}

int init(int* rank, int* size) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized == 0)
    if (const int rc = MPI_Init(nullptr, nullptr); rc != MPI_SUCCESS) return rc;
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  if (const int rc = MPI_Comm_rank(MPI_COMM_WORLD, rank); rc != MPI_SUCCESS) return rc;
  return MPI_Comm_size(MPI_COMM_WORLD, size);
}

int send(int dest, const char* data, std::size_t size) {
  if (size > static_cast<std::size_t>(INT_MAX)) return MPI_ERR_COUNT;
  // No exception leaves the plugin (the stepsim executable carries its own C++ runtime).
  try {
    pending.push_back(Pending{MPI_REQUEST_NULL, std::string(data, size)});
  } catch (const std::bad_alloc&) {
    return MPI_ERR_NO_MEM;
  }
  auto& p = pending.back();
  if (const int rc = MPI_Isend(p.data.data(), static_cast<int>(size), MPI_CHAR, dest, kTag, MPI_COMM_WORLD, &p.request);
      rc != MPI_SUCCESS) {
    pending.pop_back();
    return rc;
  }
  return progress();
}

int probe(int* source, std::size_t* size) {
  if (const int rc = progress(); rc != MPI_SUCCESS) return -rc;
  int flag = 0;
  MPI_Status status;
  if (const int rc = MPI_Iprobe(MPI_ANY_SOURCE, kTag, MPI_COMM_WORLD, &flag, &status); rc != MPI_SUCCESS) return -rc;
  if (flag == 0) return 0;
  int count = 0;
  if (const int rc = MPI_Get_count(&status, MPI_CHAR, &count); rc != MPI_SUCCESS) return -rc;
  *source = status.MPI_SOURCE;
  *size = static_cast<std::size_t>(count);
  return 1;
}

int receive(int source, char* data, std::size_t size) {
  if (size > static_cast<std::size_t>(INT_MAX)) return MPI_ERR_COUNT;
  return MPI_Recv(data, static_cast<int>(size), MPI_CHAR, source, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

int sends_pending() {
  (void)progress();
  return static_cast<int>(pending.size());
}

int finalize() {
  while (!pending.empty()) {
    if (const int rc = MPI_Wait(&pending.front().request, MPI_STATUS_IGNORE); rc != MPI_SUCCESS) return rc;
    pending.pop_front();
  }
  return MPI_Finalize();
}

const char* error_string(int code) {
  static char text[MPI_MAX_ERROR_STRING + 1];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) std::strcpy(text, "unknown MPI error");
  return text;
}

constexpr MpiPluginApi kApi{init, send, probe, receive, sends_pending, finalize, error_string};

}  // namespace

extern "C" __attribute__((visibility("default"))) const MpiPluginApi* stepsim_mpi_plugin() { return &kApi; }

}  // namespace stepsim::driver
