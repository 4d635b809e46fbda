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
#include <set>
#include <string>
#include <vector>

#include <string_view>

#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "stepsim/driver/sweep.hpp"
#include "stepsim/scenarios/error.hpp"
#include "stepsim/support/atomic_file.hpp"
#include "stepsim/support/subprocess.hpp"

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

// The "key" of a row line without parsing the whole line (rows start {"index":N,"key":"...").
std::string row_key(std::string_view line) {
  const auto k = line.find("\"key\":\"");
  if (k == std::string_view::npos) return std::string();
  std::size_t i = k + 7;
  while (i < line.size() && line[i] != '"') i += line[i] == '\\' ? 2 : 1;
  if (i >= line.size()) return std::string();
  try {
    return nlohmann::json::parse(line.substr(k + 6, i - k - 5)).get<std::string>();
  } catch (const nlohmann::json::exception&) {
    return std::string();  // not a key: the candidate counts as missing and is retried
  }
}

// Evaluates `todo` in `jobs` worker processes; appends every row line to `out_fd`. Returns the keys
// written.
std::set<std::string> run_pool(const std::vector<const scenarios::Candidate*>& todo, PruneRule rule, sim::EngineKind engine,
                               bool refined, int jobs, int out_fd, const std::string& out_file, Progress& progress,
                               std::int64_t& done) {
  std::set<std::string> written;
  if (todo.empty()) return written;
  auto* counter = static_cast<std::atomic<std::int64_t>*>(
      ::mmap(nullptr, sizeof(std::atomic<std::int64_t>), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  if (counter == MAP_FAILED) throw InternalError(std::string("sweep: mmap failed: ") + std::strerror(errno));
  new (counter) std::atomic<std::int64_t>(0);
  const auto total = static_cast<std::int64_t>(todo.size());
  const int n_workers = static_cast<int>(std::min<std::int64_t>(std::max(jobs, 1), total));
  std::vector<support::Child> workers;
  std::vector<std::string> buffers(static_cast<std::size_t>(n_workers));
  workers.reserve(static_cast<std::size_t>(n_workers));
  const auto worker_body = [&](int fd) {
    for (const auto& other : workers) ::close(other.fd());
    SimulationCache cache;
    while (true) {
      const std::int64_t i = counter->fetch_add(1);
      if (i >= total) break;
      const auto row = evaluate_candidate(*todo[static_cast<std::size_t>(i)], rule, engine, cache, refined);
      write_all(fd, row.line + "\n", "<pipe>");
    }
    return 0;
  };
  try {
    for (int w = 0; w < n_workers; ++w) workers.emplace_back(worker_body, "sweep", true);
  } catch (const support::SubprocessError& e) {
    throw InternalError(e.what());
  }

  while (true) {
    std::vector<pollfd> pfds;
    std::vector<std::size_t> which;
    for (std::size_t w = 0; w < workers.size(); ++w) {
      if (workers[w].fd() < 0) continue;
      pfds.push_back(pollfd{workers[w].fd(), POLLIN, 0});
      which.push_back(w);
    }
    if (pfds.empty()) break;
    const int ready = ::poll(pfds.data(), static_cast<nfds_t>(pfds.size()), 200);
    if (ready < 0 && errno != EINTR) throw InternalError(std::string("sweep: poll failed: ") + std::strerror(errno));
    for (std::size_t p = 0; p < pfds.size() && ready > 0; ++p) {
      if (pfds[p].revents == 0) continue;
      std::string& buffer = buffers[which[p]];
      try {
        if (!workers[which[p]].read_some(buffer)) continue;
      } catch (const support::SubprocessError& e) {
        throw InternalError(e.what());
      }
      const auto last_nl = buffer.rfind('\n');
      if (last_nl == std::string::npos) continue;
      // Complete lines go to the file in one write; the keys are noted for the caller.
      write_all(out_fd, buffer.substr(0, last_nl + 1), out_file);
      std::size_t pos = 0;
      while (pos <= last_nl) {
        const auto nl = buffer.find('\n', pos);
        written.insert(row_key(std::string_view(buffer).substr(pos, nl - pos)));
        ++done;
        pos = nl + 1;
      }
      buffer.erase(0, last_nl + 1);
      progress.update(done);
    }
  }
  std::string failure;
  for (auto& wk : workers) {
    const auto status = wk.wait();
    if (!status.ok()) failure = "a worker process " + status.describe();
  }
  ::munmap(counter, sizeof(std::atomic<std::int64_t>));
  if (!failure.empty()) std::fprintf(stderr, "stepsim sweep: %s\n", failure.c_str());
  return written;
}

}  // namespace

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
  const auto e = scenarios::enumerate(spec);
  const auto log = [&](const std::string& text) {
    if (!options.quiet) std::fprintf(stderr, "stepsim sweep: %s\n", text.c_str());
  };
  log(scenarios::enumeration_summary(e));

  std::vector<const scenarios::Candidate*> mine;
  std::map<std::string, const scenarios::Candidate*> by_key;
  for (const auto& c : e.candidates) {
    if (c.index % options.shard_count != options.shard_index) continue;
    mine.push_back(&c);
    by_key[c.key] = &c;
  }

  SweepOutcome out;
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
  out.candidates = static_cast<std::int64_t>(mine.size());

  std::set<std::string> done_keys;
  bool add_newline = false;
  if (std::filesystem::exists(out.results_file)) {
    if (!options.resume)
      throw ScenarioError(out.results_file, "already exists (use --resume to continue that sweep, or another --out)");
    const auto existing = read_rows(out.results_file);
    if (existing.truncated_tail) {
      std::ifstream in(out.results_file, std::ios::binary);
      std::string keep(existing.good_bytes, '\0');
      in.read(keep.data(), static_cast<std::streamsize>(keep.size()));
      write_file_atomically(out.results_file, keep);
      log("dropped a truncated last line of " + out.results_file);
    }
    add_newline = existing.missing_newline && !existing.truncated_tail;
    for (const auto& r : existing.rows) done_keys.insert(r.key);
    out.already_done = static_cast<std::int64_t>(existing.rows.size());
    log("resuming: " + std::to_string(existing.rows.size()) + " rows already in " + out.results_file);
  }

  const int fd = ::open(out.results_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw ScenarioError(out.results_file, std::string("cannot open for writing: ") + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  if (add_newline) write_all(fd, "\n", out.results_file);

  std::vector<const scenarios::Candidate*> todo;
  for (const auto* c : mine)
    if (done_keys.count(c->key) == 0) todo.push_back(c);
  {
    Progress progress(options.progress, static_cast<std::int64_t>(todo.size()), "sweep");
    std::int64_t done = 0;
    auto written = run_pool(todo, options.prune, sim::EngineKind::Analytic, false, options.jobs, fd, out.results_file, progress, done);
    // A worker that died leaves candidates without rows: one more try for them.
    std::vector<const scenarios::Candidate*> missing;
    for (const auto* c : todo)
      if (written.count(c->key) == 0) missing.push_back(c);
    if (!missing.empty()) {
      log("retrying " + std::to_string(missing.size()) + " candidates whose worker failed");
      written = run_pool(missing, options.prune, sim::EngineKind::Analytic, false, options.jobs, fd, out.results_file, progress, done);
    }
    progress.finish(done);
    out.evaluated += done;
  }

  if (options.refine > 0) {
    const auto rows = read_rows(out.results_file).rows;
    std::set<std::string> present;
    std::vector<SweepRow> analytic_ok;
    for (const auto& r : rows) {
      present.insert(r.key);
      if (r.status == "ok" && !r.oom && r.engine == "analytic" && by_key.count(r.key) != 0) analytic_ok.push_back(r);
    }
    std::sort(analytic_ok.begin(), analytic_ok.end(), faster);
    std::vector<const scenarios::Candidate*> refine;
    for (std::size_t i = 0; i < analytic_ok.size() && static_cast<std::int64_t>(i) < options.refine; ++i) {
      const auto* c = by_key.at(analytic_ok[i].key);
      if (present.count(c->key + " engine=simgrid") == 0) refine.push_back(c);
    }
    Progress progress(options.progress, static_cast<std::int64_t>(refine.size()), "refine");
    std::int64_t done = 0;
    run_pool(refine, options.prune, sim::EngineKind::SimGrid, true, options.jobs, fd, out.results_file, progress, done);
    progress.finish(done);
    out.evaluated += done;
  }
  ::fsync(fd);

  // Rows arrive in completion order, which depends on -j and timing: the finished file holds them
  // by candidate index (then key), replaced in one rename.
  auto all = read_rows(out.results_file).rows;
  std::stable_sort(all.begin(), all.end(), [](const SweepRow& a, const SweepRow& b) {
    return a.index != b.index ? a.index < b.index : a.key < b.key;
  });
  std::string sorted;
  for (const auto& r : all) sorted += r.line + "\n";
  write_file_atomically(out.results_file, sorted);

  // The ranking reads the file: the same table whether the rows came from one run or several.
  std::vector<SweepRow> rows;
  std::set<std::string> seen;
  for (const auto& r : all) {
    if (by_key.count(base_key(r.key)) == 0 || !seen.insert(r.key).second) continue;
    rows.push_back(r);
  }
  std::sort(rows.begin(), rows.end(), [](const SweepRow& a, const SweepRow& b) {
    return a.index != b.index ? a.index < b.index : a.key < b.key;
  });
  std::vector<std::string> header{"# Sweep " + spec.name, "", "Candidates: " + scenarios::enumeration_summary(e) + "."};
  if (options.shard_count > 1)
    header.push_back("Shard " + std::to_string(options.shard_index) + " of " + std::to_string(options.shard_count) + ": " +
                     std::to_string(mine.size()) + " candidates.");
  header.push_back("Memory prune: " + to_string(options.prune) + ".");
  out.table = ranking_markdown(rows, header);
  write_file_atomically(out.summary_file, out.table);
  return out;
}

}  // namespace stepsim::driver
