// The sweep runner: worker processes evaluate candidates; the parent appends their rows to the
// results file one complete line per write, so that a killed sweep keeps every finished row.

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <deque>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <string_view>

#include <climits>

#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "stepsim/driver/sweep.hpp"
#include "stepsim/report/format.hpp"
#include "stepsim/scenarios/error.hpp"
#include "stepsim/scenarios/load.hpp"
#include "stepsim/support/atomic_file.hpp"
#include "stepsim/support/subprocess.hpp"
#include "sweep_workers.hpp"

namespace stepsim::driver {

namespace {

void write_all(int fd, const std::string& text, const std::string& file) {
  if (!support::write_all(fd, text.data(), text.size()))
    throw ScenarioError(file, std::string("cannot write: ") + std::strerror(errno));
}

void write_file_atomically(const std::string& file, const std::string& text) {
  if (const auto failure = support::write_files_atomically({{file, text}}))
    throw ScenarioError(file, "cannot write the file" + (failure->detail.empty() ? std::string() : ": " + failure->detail));
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

class Progress {
 public:
  Progress(bool on, std::int64_t total, std::string label) : on_(on), total_(total), label_(std::move(label)), t0_(now_s()) {}
  void update(std::int64_t done, bool force = false) {
    if (!on_) return;
    const double t = now_s();
    if (!force && t - last_ < 0.1) return;
    last_ = t;
    const double rate = t > t0_ ? static_cast<double>(done) / (t - t0_) : 0;
    const double eta = rate > 0 ? static_cast<double>(total_ - done) / rate : 0;
    const int width = 30;
    const auto filled = total_ > 0 ? static_cast<int>(width * done / total_) : width;
    std::string bar(static_cast<std::size_t>(filled), '#');
    bar += std::string(static_cast<std::size_t>(width - filled), ' ');
    const auto eta_s = static_cast<long long>(eta + 0.5);
    std::fprintf(stderr, "\r%s [%s] %lld/%lld  %.0f/s  ETA %lld:%02lld   ", label_.c_str(), bar.c_str(), static_cast<long long>(done),
                 static_cast<long long>(total_), rate, eta_s / 60, eta_s % 60);
    std::fflush(stderr);
  }
  void finish(std::int64_t done) {
    if (!on_) return;
    update(done, true);
    std::fputc('\n', stderr);
  }

 private:
  bool on_;
  std::int64_t total_;
  std::string label_;
  double t0_;
  double last_ = 0;
};

// The index of a row line without parsing the whole line (rows start {"index":N,...); -1 when
// it has none.
std::int64_t row_index(std::string_view line) {
  const std::string_view head = "{\"index\":";
  if (line.substr(0, head.size()) != head) return -1;
  std::int64_t v = 0;
  std::size_t i = head.size();
  if (i >= line.size() || line[i] < '0' || line[i] > '9') return -1;
  for (; i < line.size() && line[i] >= '0' && line[i] <= '9'; ++i) v = v * 10 + (line[i] - '0');
  return v;
}

// Worker processes on this machine, fork()ed from the runner, one socket each.
class ForkWorkers final : public detail::Workers {
 public:
  int start(const detail::WorkerSetup& setup) override {
    auto body = [&setup, this](int fd) {
      for (const auto& other : children_) ::close(other.fd());
      SimulationCache cache;
      std::string in;
      char buf[1 << 16];
      while (true) {
        const auto nl = in.find('\n');
        if (nl == std::string::npos) {
          const ssize_t r = ::read(fd, buf, sizeof buf);
          if (r < 0 && errno == EINTR) continue;
          if (r <= 0) break;
          in.append(buf, static_cast<std::size_t>(r));
          continue;
        }
        write_all(fd, detail::answer_request(std::string_view(in).substr(0, nl), setup, cache), "<socket>");
        in.erase(0, nl + 1);
      }
      return 0;
    };
    try {
      children_.emplace_back(body, "sweep", true, support::Channel::Duplex);
    } catch (const support::SubprocessError& e) {
      throw InternalError(e.what());
    }
    return static_cast<int>(children_.size()) - 1;
  }

  bool send(int id, const std::string& lines) override { return child(id).send(lines); }

  void close_input(int id) override { child(id).close_input(); }

  std::vector<Event> wait(int timeout_ms) override {
    std::vector<pollfd> pfds;
    std::vector<int> which;
    for (std::size_t i = 0; i < children_.size(); ++i) {
      if (children_[i].fd() < 0) continue;
      pfds.push_back(pollfd{children_[i].fd(), POLLIN, 0});
      which.push_back(static_cast<int>(i));
    }
    std::vector<Event> events;
    if (pfds.empty()) return events;
    const int ready = ::poll(pfds.data(), static_cast<nfds_t>(pfds.size()), timeout_ms);
    if (ready < 0 && errno != EINTR) throw InternalError(std::string("sweep: poll failed: ") + std::strerror(errno));
    for (std::size_t p = 0; p < pfds.size() && ready > 0; ++p) {
      if (pfds[p].revents == 0) continue;
      Event e;
      e.id = which[p];
      try {
        e.ended = !child(e.id).read_some(e.output);
        if (e.ended) e.status = child(e.id).wait();
      } catch (const support::SubprocessError& err) {
        throw InternalError(err.what());
      }
      events.push_back(std::move(e));
    }
    return events;
  }

 private:
  support::Child& child(int id) { return children_[static_cast<std::size_t>(id)]; }
  std::deque<support::Child> children_;
};

// Workers fed one candidate at a time as the enumeration yields them: the runner sends a
// candidate (one request line) to a worker with room, and appends the row lines that come back
// to the results file, each complete line in one write.
class Pool {
 public:
  struct Setup {
    int jobs = 1;
    detail::WorkerSetup worker;
    int out_fd = -1;
    std::string out_file;
  };

  Pool(Setup setup, detail::Workers& workers, Progress& progress, std::function<void(std::int64_t)> on_row)
      : setup_(std::move(setup)), transport_(workers), progress_(progress), on_row_(std::move(on_row)) {}

  // Hands `c` to a worker, first waiting (and writing the rows that arrive) while every worker is busy.
  void submit(const scenarios::Candidate& c) {
    const std::string line = detail::request_line(c);
    while (true) {
      for (auto& w : workers_) {
        if (!w.alive || w.outstanding.size() >= kDepth) continue;
        w.outstanding.push_back(c.index);
        if (!transport_.send(w.id, line)) break;  // it died: its candidates are noted when its output ends
        return;
      }
      if (live() < std::min<std::size_t>(static_cast<std::size_t>(setup_.jobs), workers_.size() + 1) || live() == 0) {
        spawn();
        continue;
      }
      pump(200);
    }
  }

  // Waits for the rows of every candidate handed out; returns the candidates whose worker died first.
  std::vector<std::int64_t> finish() {
    for (auto& w : workers_)
      if (w.alive) transport_.close_input(w.id);
    while (live() > 0) pump(200);
    return std::move(failed_);
  }

  [[nodiscard]] std::int64_t rows() const { return rows_; }

 private:
  static constexpr std::size_t kDepth = 2;  // candidates in flight per worker
  struct Worker {
    int id = -1;
    std::string buffer;
    std::deque<std::int64_t> outstanding;
    bool alive = true;
  };

  [[nodiscard]] std::size_t live() const {
    return static_cast<std::size_t>(std::count_if(workers_.begin(), workers_.end(), [](const Worker& w) { return w.alive; }));
  }

  void spawn() {
    if (++spawned_ > static_cast<std::int64_t>(setup_.jobs) + 8)
      throw InternalError("sweep: worker processes keep failing (" + last_failure_ + ")");
    workers_.push_back(Worker{transport_.start(setup_.worker), {}, {}, true});
  }

  void pump(int timeout_ms) {
    if (live() == 0) return;
    for (auto& event : transport_.wait(timeout_ms)) {
      const auto it = std::find_if(workers_.begin(), workers_.end(), [&](const Worker& w) { return w.alive && w.id == event.id; });
      if (it == workers_.end()) throw InternalError("sweep: output from an unknown worker " + std::to_string(event.id));
      Worker& w = *it;
      w.buffer += event.output;
      const auto last_nl = w.buffer.rfind('\n');
      if (last_nl != std::string::npos) {
        write_all(setup_.out_fd, w.buffer.substr(0, last_nl + 1), setup_.out_file);
        std::size_t pos = 0;
        while (pos <= last_nl) {
          const auto nl = w.buffer.find('\n', pos);
          const auto index = row_index(std::string_view(w.buffer).substr(pos, nl - pos));
          if (!w.outstanding.empty() && w.outstanding.front() == index) w.outstanding.pop_front();
          ++rows_;
          if (on_row_) on_row_(index);
          pos = nl + 1;
        }
        w.buffer.erase(0, last_nl + 1);
        progress_.update(rows_);
      }
      if (event.ended) {
        w.alive = false;
        if (!w.outstanding.empty() || !event.status.ok()) {
          last_failure_ = "a worker process " + event.status.describe();
          failed_.insert(failed_.end(), w.outstanding.begin(), w.outstanding.end());
          w.outstanding.clear();
        }
      }
    }
  }

  Setup setup_;
  detail::Workers& transport_;
  Progress& progress_;
  std::function<void(std::int64_t)> on_row_;
  std::vector<Worker> workers_;
  std::vector<std::int64_t> failed_;
  std::int64_t rows_ = 0;
  std::int64_t spawned_ = 0;
  std::string last_failure_;
};

}  // namespace

namespace detail {

std::string setup_json(const WorkerSetup& setup) {
  return nlohmann::json{{"rule", to_string(setup.rule)},
                        {"engine", sim::to_string(setup.engine)},
                        {"refined", setup.refined},
                        {"fingerprint", setup.stamp.fingerprint},
                        {"candidates", setup.stamp.candidates},
                        {"origin", setup.origin}}
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

WorkerSetup parse_setup(std::string_view json) {
  const auto j = nlohmann::json::parse(json);
  WorkerSetup setup;
  setup.rule = parse_prune_rule(j.at("rule").get<std::string>());
  setup.engine = j.at("engine").get<std::string>() == sim::to_string(sim::EngineKind::SimGrid) ? sim::EngineKind::SimGrid
                                                                                               : sim::EngineKind::Analytic;
  setup.refined = j.at("refined").get<bool>();
  setup.stamp.fingerprint = j.at("fingerprint").get<std::string>();
  setup.stamp.candidates = j.at("candidates").get<std::int64_t>();
  setup.origin = j.at("origin").get<std::string>();
  return setup;
}

std::string request_line(const scenarios::Candidate& c) {
  const nlohmann::json request{{"index", c.index}, {"key", c.key}, {"scenario", nlohmann::json::parse(c.scenario_json)}};
  return request.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string answer_request(std::string_view request_text, const WorkerSetup& setup, SimulationCache& cache) {
  const auto request = nlohmann::json::parse(request_text);
  scenarios::Candidate c;
  c.index = request.at("index").get<std::int64_t>();
  c.key = request.at("key").get<std::string>();
  c.scenario_json = request.at("scenario").dump();
  c.scenario = scenarios::load_scenario_text(c.scenario_json, {}, setup.origin);
  c.loaded = true;
  return evaluate_candidate(c, setup.rule, setup.engine, cache, setup.refined, setup.stamp).line + "\n";
}

}  // namespace detail

std::string results_file_name(const SweepOptions& o) {
  if (o.shard_count <= 1) return "results.jsonl";
  return "results.shard-" + std::to_string(o.shard_index) + "-of-" + std::to_string(o.shard_count) + ".jsonl";
}

std::string summary_file_name(const SweepOptions& o) {
  if (o.shard_count <= 1) return "summary.md";
  return "summary.shard-" + std::to_string(o.shard_index) + "-of-" + std::to_string(o.shard_count) + ".md";
}

SweepOutcome run_sweep(const scenarios::SweepSpec& spec, const SweepOptions& options) {
  if (options.shard_count < 1 || options.shard_index < 0 || options.shard_index >= options.shard_count)
    throw ScenarioError("--shard", "expected I/N with 0 <= I < N");
  if (options.refine < 0) throw ScenarioError("--refine", "must be at least 0");
  if (options.jobs < 1) throw ScenarioError("-j", "must be at least 1, got " + std::to_string(options.jobs));
  if (options.max_candidates < 1) throw ScenarioError("--max-candidates", "must be at least 1, got " + std::to_string(options.max_candidates));
  const auto log = [&](const std::string& text) {
    if (!options.quiet) std::fprintf(stderr, "stepsim sweep: %s\n", text.c_str());
  };
  const auto mine = [&](std::int64_t index) { return index % options.shard_count == options.shard_index; };

  // The combinations the axes make (auto axes count once): far more than the ceiling is refused
  // before enumerating them.
  {
    std::int64_t combinations = 1;
    bool overflow = false;
    for (const auto& a : spec.axes)
      if (!a.automatic) overflow = overflow || __builtin_mul_overflow(combinations, static_cast<std::int64_t>(a.values_json.size()), &combinations);
    std::int64_t ceiling = 0;
    if (__builtin_mul_overflow(options.max_candidates, kCombinationsPerCandidate, &ceiling)) ceiling = INT64_MAX;
    if (overflow || combinations / options.shard_count > ceiling)
      throw ScenarioError("axes", "make " + (overflow ? std::string("more than 9.2e18") : report::grouped(static_cast<double>(combinations))) +
                                      " combinations, more than " + std::to_string(kCombinationsPerCandidate) +
                                      " x --max-candidates (" + report::grouped(static_cast<double>(options.max_candidates)) +
                                      ") per process; narrow the axes, split the sweep with --shard, or raise --max-candidates");
  }

  // Pass 1: count the candidates (refusing too many) and keep a few, spread over the shard, to
  // time them.
  const double t_count0 = now_s();
  std::int64_t shard_candidates = 0;
  constexpr std::size_t kSamples = 4;
  std::vector<scenarios::Candidate> samples;
  std::mt19937_64 rng(0x5eed);
  const auto counts = scenarios::for_each_candidate(spec, [&](scenarios::Candidate&& c) {
    if (!mine(c.index)) return true;
    ++shard_candidates;
    if (shard_candidates > options.max_candidates)
      throw ScenarioError("--max-candidates", "the sweep has more than " + report::grouped(static_cast<double>(options.max_candidates)) +
                                                  " candidates" + (options.shard_count > 1 ? " in this shard" : "") +
                                                  "; narrow the axes, split it with --shard I/N, or raise --max-candidates");
    if (samples.size() < kSamples) {
      samples.push_back(std::move(c));
    } else {
      const auto j = std::uniform_int_distribution<std::int64_t>(0, shard_candidates - 1)(rng);
      if (j < static_cast<std::int64_t>(kSamples)) samples[static_cast<std::size_t>(j)] = std::move(c);
    }
    return true;
  }, true, scenarios::CandidateLoad::JsonOnly);
  const double count_s = now_s() - t_count0;
  const SweepStamp stamp{sweep_fingerprint(spec, options.prune, options.version), counts.valid};

  SweepOutcome out;
  out.fingerprint = stamp.fingerprint;
  out.candidates = shard_candidates;
  std::error_code ec;
  std::filesystem::create_directories(options.out_dir, ec);
  if (ec) throw ScenarioError(options.out_dir, "cannot create the output directory: " + ec.message());
  // One writer per output directory: a second sweep (or --resume) into it is refused while the
  // first runs. The lock is on the directory itself, released when this process ends.
  const int dir_fd = ::open(options.out_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) throw ScenarioError(options.out_dir, std::string("cannot open the output directory: ") + std::strerror(errno));
  struct DirLock {
    int fd;
    ~DirLock() { ::close(fd); }
  } dir_lock{dir_fd};
  if (::flock(dir_fd, LOCK_EX | LOCK_NB) != 0)
    throw ScenarioError(options.out_dir, "another stepsim sweep is writing into this directory; wait for it or use another --out");
  out.results_file = (std::filesystem::path(options.out_dir) / results_file_name(options)).string();
  out.summary_file = (std::filesystem::path(options.out_dir) / summary_file_name(options)).string();

  // Rows already there (--resume): they must come from this very sweep.
  std::vector<bool> done(static_cast<std::size_t>(counts.valid), false);
  std::set<std::int64_t> refined_done;
  bool add_newline = false;
  std::string resume_note;
  if (std::filesystem::exists(out.results_file)) {
    if (!options.resume)
      throw ScenarioError(out.results_file, "already exists (use --resume to continue that sweep, or another --out)");
    const auto scan = scan_rows(out.results_file, [&](SweepRow&& r, std::int64_t line) {
      const std::string where = out.results_file + ":" + std::to_string(line);
      if (r.sweep != stamp.fingerprint)
        throw ScenarioError(where, "was written by another sweep (fingerprint " + (r.sweep.empty() ? std::string("none") : r.sweep) +
                                       ", this sweep " + stamp.fingerprint +
                                       ": its base, axes, constraints, prune rule or stepsim version differ); use another --out");
      if (r.index >= counts.valid || !mine(r.index))
        throw ScenarioError(where, "candidate " + std::to_string(r.index) + " is not one of this sweep's" +
                                       (options.shard_count > 1 ? " shard's" : "") + " candidates");
      if (!done[static_cast<std::size_t>(r.index)]) ++out.already_done;
      done[static_cast<std::size_t>(r.index)] = true;
      if (r.engine == "simgrid") refined_done.insert(r.index);
    });
    if (scan.truncated_tail) {
      if (::truncate(out.results_file.c_str(), static_cast<off_t>(scan.good_bytes)) != 0)
        throw ScenarioError(out.results_file, std::string("cannot drop its cut-off last line: ") + std::strerror(errno));
      resume_note = "dropped a truncated last line of " + out.results_file;
    }
    add_newline = scan.missing_newline && !scan.truncated_tail;
  }

  const int fd = ::open(out.results_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw ScenarioError(out.results_file, std::string("cannot open for writing: ") + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  if (add_newline) write_all(fd, "\n", out.results_file);

  // The sampled candidates are evaluated here, timed, and their rows written.
  SimulationCache cache;
  double sample_s = 0;
  std::int64_t sampled = 0;
  std::sort(samples.begin(), samples.end(), [](const auto& a, const auto& b) { return a.index < b.index; });
  for (auto& c : samples) {
    if (done[static_cast<std::size_t>(c.index)]) continue;
    const double t0 = now_s();
    if (!c.loaded) {
      c.scenario = scenarios::load_scenario_text(c.scenario_json, {}, spec.origin);
      c.loaded = true;
    }
    const auto row = evaluate_candidate(c, options.prune, sim::EngineKind::Analytic, cache, false, stamp);
    sample_s += now_s() - t0;
    write_all(fd, row.line + "\n", out.results_file);
    done[static_cast<std::size_t>(c.index)] = true;
    ++sampled;
    ++out.evaluated;
  }
  samples.clear();
  const std::int64_t todo = shard_candidates - out.already_done - sampled;

  // The workers: the other ranks of an MPI job, else processes forked here.
  const bool remote = options.mpi != nullptr && options.mpi->size() > 1;
  const int jobs = remote ? options.mpi->size() - 1 : options.jobs;
  const auto make_workers = [&](bool local) -> std::unique_ptr<detail::Workers> {
    if (remote && !local) return detail::mpi_workers(*options.mpi);
    return std::make_unique<ForkWorkers>();
  };

  std::string info = scenarios::enumeration_summary(counts);
  if (options.shard_count > 1)
    info += "; shard " + std::to_string(options.shard_index) + "/" + std::to_string(options.shard_count) + ": " +
            std::to_string(shard_candidates);
  if (out.already_done > 0) info += "; resuming: " + std::to_string(out.already_done) + " already in " + out.results_file;
  if (todo > 0 && sampled > 0) {
    const double per = sample_s / static_cast<double>(sampled);
    info += "; " + std::to_string(todo + sampled) + " to evaluate, about " +
            report::human_duration(count_s + per * static_cast<double>(todo) / jobs) + " with " + std::to_string(jobs) +
            (remote ? " MPI worker rank" : " worker") + (jobs == 1 ? "" : "s") + " (" + report::fixed(per * 1e3, 1) + " ms each on " +
            std::to_string(sampled) + " sampled)";
  }
  log(info);
  if (!resume_note.empty()) log(resume_note);

  Pool::Setup setup;
  setup.jobs = jobs;
  setup.worker.rule = options.prune;
  setup.worker.stamp = stamp;
  setup.worker.origin = spec.origin;
  setup.out_fd = fd;
  setup.out_file = out.results_file;
  const auto mark = [&done](std::int64_t index) {
    if (index >= 0 && index < static_cast<std::int64_t>(done.size())) done[static_cast<std::size_t>(index)] = true;
  };

  // Pass 2: the others, fed to the workers as the enumeration yields them.
  if (todo > 0) {
    Progress progress(options.progress, todo, "sweep");
    const auto workers = make_workers(false);
    Pool pool(setup, *workers, progress, mark);
    (void)scenarios::for_each_candidate(spec, [&](scenarios::Candidate&& c) {
      if (mine(c.index) && !done[static_cast<std::size_t>(c.index)]) pool.submit(c);
      return true;
    }, true, scenarios::CandidateLoad::JsonOnly);
    auto failed = pool.finish();
    out.evaluated += pool.rows();
    // A worker that died leaves candidates without rows: one more try each, alone in a process
    // forked here; a second failure is an error row.
    if (!failed.empty()) {
      log("retrying " + std::to_string(failed.size()) + " candidates whose worker failed");
      std::set<std::int64_t> retry(failed.begin(), failed.end());
      auto one = setup;
      one.jobs = 1;
      std::vector<scenarios::Candidate> again;
      (void)scenarios::for_each_candidate(spec, [&](scenarios::Candidate&& c) {
        if (retry.count(c.index) != 0) again.push_back(std::move(c));
        return again.size() < retry.size();
      });
      for (const auto& c : again) {
        const auto local = make_workers(true);
        Pool single(one, *local, progress, mark);
        single.submit(c);
        if (!single.finish().empty()) {
          auto row = failed_row(c, "the worker process evaluating it failed twice", stamp);
          write_all(fd, row.line + "\n", out.results_file);
          ++out.evaluated;
        } else {
          out.evaluated += single.rows();
        }
      }
    }
    progress.finish(pool.rows());
  }

  // Refinement: the K fastest analytic rows of the shard, re-simulated with SimGrid.
  if (options.refine > 0) {
    // Candidates by their analytic tokens/s (a refined row keeps its analytic figure), so that a
    // resumed sweep picks the same K.
    std::vector<SweepRow> top;
    (void)scan_rows(out.results_file, [&](SweepRow&& r, std::int64_t) {
      if (r.engine == "simgrid") {
        refined_done.insert(r.index);
        if (!r.analytic_tokens_per_s) return;
        r.tokens_per_s = r.analytic_tokens_per_s;
      } else if (r.status != "simulated" || r.oom || r.engine != "analytic") {
        return;
      }
      if (static_cast<std::int64_t>(top.size()) == options.refine && !faster(r, top.back())) return;
      std::string().swap(r.line);
      top.insert(std::upper_bound(top.begin(), top.end(), r, faster), std::move(r));
      if (static_cast<std::int64_t>(top.size()) > options.refine) top.pop_back();
    });
    std::set<std::int64_t> wanted;
    for (const auto& r : top)
      if (refined_done.count(r.index) == 0) wanted.insert(r.index);
    if (!wanted.empty()) {
      Progress progress(options.progress, static_cast<std::int64_t>(wanted.size()), "refine");
      auto refine_setup = setup;
      refine_setup.worker.engine = sim::EngineKind::SimGrid;
      refine_setup.worker.refined = true;
      const auto workers = make_workers(false);
      Pool pool(refine_setup, *workers, progress, nullptr);
      std::size_t found = 0;
      (void)scenarios::for_each_candidate(spec, [&](scenarios::Candidate&& c) {
        if (wanted.count(c.index) == 0) return true;
        pool.submit(c);
        return ++found < wanted.size();
      }, true, scenarios::CandidateLoad::JsonOnly);
      const auto failed = pool.finish();
      out.evaluated += pool.rows();
      if (!failed.empty()) log(std::to_string(failed.size()) + " SimGrid re-simulations failed (their worker died); their analytic rows stay");
      progress.finish(pool.rows());
    }
  }
  ::fsync(fd);

  // Rows arrive in completion order, which depends on -j and timing: the finished file holds one
  // row per candidate in candidate order, replaced in one rename; the ranking reads it as it is
  // written, so it is the same whether the rows came from one run or several.
  Ranking ranking;
  SortOptions sort;
  sort.run_dir = options.out_dir;
  SortStats stats;
  if (const auto failure = support::write_files_atomically({{out.results_file, support::ContentWriter([&](std::ostream& o) {
                                                              stats = sort_rows({out.results_file}, o,
                                                                                [&ranking](const SweepRow& r) { ranking.add(r); }, sort);
                                                            })}}))
    throw ScenarioError(out.results_file, "cannot write the file" + (failure->detail.empty() ? std::string() : ": " + failure->detail));
  for (const auto& w : stats.warnings) log(w);

  std::vector<std::string> header{"# Sweep " + spec.name, "", "Candidates: " + scenarios::enumeration_summary(counts) + "."};
  if (options.shard_count > 1)
    header.push_back("Shard " + std::to_string(options.shard_index) + " of " + std::to_string(options.shard_count) + ": " +
                     std::to_string(shard_candidates) + " candidates.");
  header.push_back("Memory prune: " + describe(options.prune) + ".");
  out.table = ranking.markdown(header);
  write_file_atomically(out.summary_file, out.table);
  return out;
}

}  // namespace stepsim::driver
