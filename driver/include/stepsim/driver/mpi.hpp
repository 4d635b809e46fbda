#pragma once
// Sweeps across the ranks of an MPI job (`mpirun -n N stepsim sweep FILE --mpi`): rank 0 runs the
// sweep as on one machine (enumeration, results file, ranking) and hands candidates to ranks
// 1..N-1 as they free up; they evaluate them as a sweep's worker processes do, so the files are
// the same bytes as `sweep -j` on one machine. MPI is a plugin (libstepsim-mpi.so, built when
// CMake finds MPI) loaded only here: stepsim's other commands never load libmpi.

#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace stepsim::driver {

struct MpiPluginApi;

// One MPI job as this process sees it, from MPI_Init to MPI_Finalize.
class MpiSession {
 public:
  // Loads the plugin and initialises MPI. ScenarioError("--mpi", ...) when this stepsim was built
  // without MPI or the plugin cannot be loaded; InternalError when MPI_Init fails.
  MpiSession();
  // Rank 0: tells the other ranks to stop and waits for them. Then MPI_Finalize.
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  [[nodiscard]] int rank() const { return rank_; }
  [[nodiscard]] int size() const { return size_; }

  // Sends `message` to rank `dest` without waiting for it to be received.
  void send(int dest, std::string_view message);
  // The next message from any rank, with its source, waiting up to `timeout_ms` (-1: as long as
  // it takes); nullopt when none came.
  [[nodiscard]] std::optional<std::pair<int, std::string>> receive(int timeout_ms);

 private:
  const MpiPluginApi* api_ = nullptr;
  int rank_ = 0;
  int size_ = 1;
};

// Whether this stepsim was built with the MPI plugin.
[[nodiscard]] bool mpi_available();

// Ranks other than 0: evaluates the candidates rank 0 sends until it says stop.
void serve_sweep_worker(MpiSession& mpi);

}  // namespace stepsim::driver
