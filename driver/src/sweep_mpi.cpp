// Sweeps across the ranks of an MPI job: the session (the plugin, MPI_Init, MPI_Finalize), rank
// 0's view of the other ranks as the sweep pool's workers, and the loop those ranks run.
//
// Messages are one letter and a text. Rank 0 to a worker rank: S<setup JSON> (a worker of a new
// pool starts), R<request line>, E (no more requests for this worker), Q (stop). A worker rank to
// rank 0: O<row line> (one per request, in order), X (answered every request after E), F<exit
// status> (the worker failed as a worker process that exits with that status would; its rank then
// ignores requests until the next S), Q (stopping).

#include "stepsim/driver/mpi.hpp"

#include <dlfcn.h>
#include <time.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "mpi_plugin.hpp"
#include "stepsim/scenarios/error.hpp"
#include "stepsim/support/out_of_memory.hpp"
#include "stepsim/support/plugin.hpp"
#include "sweep_workers.hpp"

namespace stepsim::driver {

namespace {

// How long a rank sleeps between looks for a message while it waits.
constexpr long kPollSleepNs = 200'000;

[[noreturn]] void mpi_failed(const MpiPluginApi* api, const std::string& call, int code) {
  throw InternalError("MPI: " + call + " failed: " + api->error_string(code));
}

// Rank 0's view of the worker ranks: a worker of the pool runs on a free rank until it ends.
class MpiWorkers final : public detail::Workers {
 public:
  explicit MpiWorkers(MpiSession& mpi) : mpi_(mpi), worker_on_(static_cast<std::size_t>(mpi.size()), -1) {}

  int start(const detail::WorkerSetup& setup) override {
    for (int r = 1; r < mpi_.size(); ++r) {
      if (worker_on_[static_cast<std::size_t>(r)] >= 0) continue;
      const int id = next_id_++;
      worker_on_[static_cast<std::size_t>(r)] = id;
      rank_of_[id] = r;
      mpi_.send(r, "S" + detail::setup_json(setup));
      return id;
    }
    throw InternalError("sweep: no MPI rank is free for another worker");
  }

  bool send(int id, const std::string& lines) override {
    mpi_.send(rank_of_.at(id), "R" + lines);
    return true;
  }

  void close_input(int id) override { mpi_.send(rank_of_.at(id), "E"); }

  std::vector<Event> wait(int timeout_ms) override {
    std::vector<Event> events;
    for (auto message = mpi_.receive(timeout_ms); message; message = mpi_.receive(0)) {
      const auto& [source, text] = *message;
      const int id = source > 0 && source < mpi_.size() ? worker_on_[static_cast<std::size_t>(source)] : -1;
      if (id < 0 || text.empty()) throw InternalError("sweep: an unexpected message from MPI rank " + std::to_string(source));
      Event e;
      e.id = id;
      if (text[0] == 'O') {
        e.output = text.substr(1);
      } else if (text[0] == 'X' || text[0] == 'F') {
        e.ended = true;
        e.status.exited = true;
        e.status.code = text[0] == 'X' ? 0 : std::stoi(text.substr(1));
        worker_on_[static_cast<std::size_t>(source)] = -1;
      } else {
        throw InternalError("sweep: an unexpected message from MPI rank " + std::to_string(source));
      }
      events.push_back(std::move(e));
    }
    return events;
  }

 private:
  MpiSession& mpi_;
  std::vector<int> worker_on_;  // per rank, the id of the worker it runs, -1 when free
  std::map<int, int> rank_of_;
  int next_id_ = 0;
};

}  // namespace

bool mpi_available() {
#ifdef STEPSIM_MPI_PLUGIN
  return true;
#else
  return false;
#endif
}

MpiSession::MpiSession() {
#ifndef STEPSIM_MPI_PLUGIN
  throw ScenarioError("--mpi", "this stepsim was built without MPI (install Debian's openmpi-bin and libopenmpi-dev, then run cmake and build again)");
#else
  const std::string path = support::plugin_path(kMpiPluginFile, STEPSIM_MPI_PLUGIN);
  // Global: Open MPI's own components, which it loads in turn, look up libmpi's symbols.
  void* lib = ::dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (lib == nullptr) throw ScenarioError("--mpi", "cannot load the MPI plugin: " + std::string(::dlerror()));
  void* entry = ::dlsym(lib, kMpiPluginSymbol);
  if (entry == nullptr) throw InternalError(path + " has no " + kMpiPluginSymbol);
  api_ = reinterpret_cast<MpiPluginEntry>(entry)();
  if (const int rc = api_->init(&rank_, &size_); rc != 0) mpi_failed(api_, "MPI_Init", rc);
#endif
}

MpiSession::~MpiSession() {
  if (api_ == nullptr) return;
  try {
    if (rank_ == 0) {
      for (int r = 1; r < size_; ++r) send(r, "Q");
      for (int stopped = 0; stopped < size_ - 1;) {
        const auto message = receive(-1);
        if (message && message->second == "Q") ++stopped;  // rows of an interrupted sweep are dropped
      }
    }
    (void)api_->finalize();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "stepsim: error: MPI rank %d could not end the MPI job cleanly: %s\n", rank_, e.what());
  }
}

void MpiSession::send(int dest, std::string_view message) {
  if (const int rc = api_->send(dest, message.data(), message.size()); rc != 0) mpi_failed(api_, "sending to rank " + std::to_string(dest), rc);
}

std::optional<std::pair<int, std::string>> MpiSession::receive(int timeout_ms) {
  const auto t0 = std::chrono::steady_clock::now();
  while (true) {
    int source = -1;
    std::size_t size = 0;
    const int rc = api_->probe(&source, &size);
    if (rc < 0) mpi_failed(api_, "MPI_Iprobe", -rc);
    if (rc == 1) {
      std::string text(size, '\0');
      if (const int r = api_->receive(source, text.data(), size); r != 0) mpi_failed(api_, "MPI_Recv", r);
      return std::make_pair(source, std::move(text));
    }
    if (timeout_ms >= 0 && std::chrono::steady_clock::now() - t0 >= std::chrono::milliseconds(timeout_ms)) return std::nullopt;
    const timespec pause{0, kPollSleepNs};
    ::nanosleep(&pause, nullptr);
  }
}

std::unique_ptr<detail::Workers> detail::mpi_workers(MpiSession& mpi) { return std::make_unique<MpiWorkers>(mpi); }

void serve_sweep_worker(MpiSession& mpi) {
  std::optional<detail::WorkerSetup> setup;  // empty between pools and after a failure
  std::unique_ptr<SimulationCache> cache;
  const std::string prefix = "stepsim: error: sweep rank " + std::to_string(mpi.rank()) + ": ";
  while (true) {
    auto message = mpi.receive(-1);
    if (!message || message->first != 0 || message->second.empty()) continue;
    const std::string& text = message->second;
    switch (text[0]) {
      case 'S':
        setup = detail::parse_setup(std::string_view(text).substr(1));
        cache = std::make_unique<SimulationCache>();
        break;
      case 'R': {
        if (!setup) break;
        std::string_view request = std::string_view(text).substr(1);
        if (!request.empty() && request.back() == '\n') request.remove_suffix(1);
        int failed = 0;
        try {
          mpi.send(0, "O" + detail::answer_request(request, *setup, *cache));
        } catch (const std::bad_alloc&) {
          support::report_out_of_memory(prefix.c_str());
          failed = support::kOutOfMemoryExitCode;
        } catch (const std::exception&) {
          failed = 1;
        }
        if (failed != 0) {
          setup.reset();
          cache.reset();
          mpi.send(0, "F" + std::to_string(failed));
        }
        break;
      }
      case 'E':
        if (setup) mpi.send(0, "X");
        setup.reset();
        cache.reset();
        break;
      case 'Q':
        mpi.send(0, "Q");
        return;
      default:
        break;
    }
  }
}

}  // namespace stepsim::driver
