#pragma once
// The MPI plugin (libstepsim-mpi.so, mpi_plugin.cpp): the only code linked with MPI, loaded by
// `stepsim sweep --mpi` (sweep_mpi.cpp), so that stepsim and its other commands never load libmpi.
// A plain C interface: messages of bytes between the ranks of MPI_COMM_WORLD, one tag, in the
// order they were sent (MPI's non-overtaking rule).

#include <cstddef>

namespace stepsim::driver {

extern "C" {

struct MpiPluginApi {
  // MPI_Init; this process's rank and the number of ranks. 0 on success, else MPI's error code.
  int (*init)(int* rank, int* size);
  // Sends a copy of `size` bytes to `dest` without waiting for it to be received. 0 on success.
  int (*send)(int dest, const char* data, std::size_t size);
  // Whether a message is waiting (without waiting for one): 1 with its source and size, 0 when
  // none, else minus MPI's error code.
  int (*probe)(int* source, std::size_t* size);
  // Receives the waiting message of `source` into `data` (probe's size). 0 on success.
  int (*receive)(int source, char* data, std::size_t size);
  // How many sent messages have not been taken from this process yet (progresses them).
  int (*sends_pending)();
  // MPI_Finalize, after waiting for the sent messages. 0 on success.
  int (*finalize)();
  // MPI_Error_string of a code, into a static buffer.
  const char* (*error_string)(int code);
};

// The plugin's one exported function.
using MpiPluginEntry = const MpiPluginApi* (*)();

}  // extern "C"

inline constexpr const char* kMpiPluginFile = "libstepsim-mpi.so";
inline constexpr const char* kMpiPluginSymbol = "stepsim_mpi_plugin";

}  // namespace stepsim::driver
