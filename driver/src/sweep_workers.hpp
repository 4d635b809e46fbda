#pragma once
// The workers of a sweep, as the sweep runner's pool sees them: something that evaluates the
// candidates sent to it (one JSON line each: index, key, scenario) and answers with one row line
// each, in order. Two kinds: fork()ed processes on this machine (sweep_runner.cpp) and the other
// ranks of an MPI job (sweep_mpi.cpp). Both answer a request with answer_request.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "stepsim/driver/mpi.hpp"
#include "stepsim/driver/sweep.hpp"
#include "stepsim/support/subprocess.hpp"

namespace stepsim::driver::detail {

// What every worker of one pool needs besides the candidates.
struct WorkerSetup {
  PruneRule rule = PruneRule::Stepsim;
  sim::EngineKind engine = sim::EngineKind::Analytic;
  bool refined = false;
  SweepStamp stamp;
  std::string origin;  // the sweep file, for loader messages
};
// The setup as one JSON text and back (for workers in other processes that did not fork from the runner).
[[nodiscard]] std::string setup_json(const WorkerSetup& setup);
[[nodiscard]] WorkerSetup parse_setup(std::string_view json);

// The request line (with its newline) that hands `c` to a worker.
[[nodiscard]] std::string request_line(const scenarios::Candidate& c);
// A worker's answer to one request line (without its newline): the row line, with its newline.
[[nodiscard]] std::string answer_request(std::string_view request, const WorkerSetup& setup, SimulationCache& cache);

// Workers started, fed and heard from by the pool.
class Workers {
 public:
  virtual ~Workers() = default;
  // Starts a worker for `setup` and returns its id.
  virtual int start(const WorkerSetup& setup) = 0;
  // Sends request lines; false when the worker has gone (what it had is noted when its output ends).
  virtual bool send(int id, const std::string& lines) = 0;
  // No more requests for this worker: it ends once it has answered those it has.
  virtual void close_input(int id) = 0;
  // What came back within `timeout_ms`: output of a worker, or its end and how it ended.
  struct Event {
    int id = -1;
    std::string output;
    bool ended = false;
    support::ExitStatus status;  // when ended
  };
  [[nodiscard]] virtual std::vector<Event> wait(int timeout_ms) = 0;
};

// The other ranks of an MPI job, seen from rank 0 (sweep_mpi.cpp).
[[nodiscard]] std::unique_ptr<Workers> mpi_workers(MpiSession& mpi);

}  // namespace stepsim::driver::detail
