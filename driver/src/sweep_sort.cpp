// Sorting and merging results files in bounded memory: rows are gathered in chunks, each chunk
// sorted and written as a run, the runs merged; one row per candidate comes out.

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <queue>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "stepsim/driver/sweep.hpp"
#include "stepsim/report/format.hpp"
#include "stepsim/scenarios/error.hpp"

namespace stepsim::driver {

namespace {

// One row as the sort sees it.
struct Entry {
  std::int64_t sweep = 0;   // ordinal of its fingerprint, in order of first appearance
  std::int64_t index = 0;
  std::string key;          // the candidate's key (base_key)
  int engine_rank = 0;      // 0 analytic or unsimulated, 1 simgrid (a refined row)
  std::string origin;       // "file:line"
  std::string line;
};

bool before(const Entry& a, const Entry& b) {
  if (a.sweep != b.sweep) return a.sweep < b.sweep;
  if (a.index != b.index) return a.index < b.index;
  if (a.key != b.key) return a.key < b.key;
  if (a.engine_rank != b.engine_rank) return a.engine_rank < b.engine_rank;
  return a.line < b.line;
}

std::size_t entry_bytes(const Entry& e) { return sizeof(Entry) + e.key.size() + e.origin.size() + e.line.size(); }

// A run file: one entry per line, its fields separated by tabs (key and origin as JSON strings,
// which hold no tab or newline; the row line last).
void write_entry(std::ostream& out, const Entry& e) {
  out << e.sweep << '\t' << e.index << '\t' << e.engine_rank << '\t' << nlohmann::json(e.key).dump() << '\t'
      << nlohmann::json(e.origin).dump() << '\t' << e.line << '\n';
}

bool read_entry(std::istream& in, Entry& e) {
  std::string text;
  if (!std::getline(in, text)) return false;
  std::size_t pos = 0;
  const auto field = [&]() {
    const auto tab = text.find('\t', pos);
    if (tab == std::string::npos) throw InternalError("sort: malformed run line");
    std::string f = text.substr(pos, tab - pos);
    pos = tab + 1;
    return f;
  };
  e.sweep = std::stoll(field());
  e.index = std::stoll(field());
  e.engine_rank = std::stoi(field());
  e.key = nlohmann::json::parse(field()).get<std::string>();
  e.origin = nlohmann::json::parse(field()).get<std::string>();
  e.line = text.substr(pos);
  return true;
}

class Runs {
 public:
  explicit Runs(std::string dir) : dir_(std::move(dir)) {}
  ~Runs() {
    std::error_code ec;
    for (const auto& f : files_) std::filesystem::remove(f, ec);
  }
  Runs(const Runs&) = delete;
  Runs& operator=(const Runs&) = delete;

  void write(std::vector<Entry>& chunk) {
    std::sort(chunk.begin(), chunk.end(), before);
    const auto file = (std::filesystem::path(dir_) / (".stepsim-sort." + std::to_string(::getpid()) + "." +
                                                      std::to_string(files_.size()))).string();
    files_.push_back(file);
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    for (const auto& e : chunk) write_entry(out, e);
    out.flush();
    if (!out) throw ScenarioError(file, std::string("cannot write a temporary sort file: ") + std::strerror(errno));
    chunk.clear();
  }
  [[nodiscard]] const std::vector<std::string>& files() const { return files_; }

 private:
  std::string dir_;
  std::vector<std::string> files_;
};

// Collapses the sorted entries into one row per candidate and writes them.
class Emitter {
 public:
  Emitter(std::ostream& out, const std::function<void(const SweepRow&)>& on_row, SortStats& stats,
          const std::vector<std::string>& fingerprints, const std::map<std::int64_t, std::int64_t>& candidates, bool coverage)
      : out_(out), on_row_(on_row), stats_(stats), fingerprints_(fingerprints), candidates_(candidates), coverage_(coverage) {}

  void push(Entry&& e) {
    if (pending_) {
      Entry& p = *pending_;
      if (p.sweep == e.sweep && p.index == e.index) {
        const bool fingerprinted = !fingerprints_[static_cast<std::size_t>(e.sweep)].empty();
        if (p.key == e.key && p.engine_rank == e.engine_rank) {
          if (p.line != e.line)
            throw ScenarioError(e.origin, "conflicts with " + p.origin + ": two different rows for candidate " +
                                              std::to_string(e.index) + " (" + e.key + ") of one sweep");
          ++stats_.duplicates;
          return;
        }
        if (p.key == e.key) {  // the refined row after the analytic one replaces it, unless it failed
          if (report::parse_row(e.line, e.origin).status == "simulated") {
            ++stats_.replaced;
            p = std::move(e);
          } else {
            stats_.warnings.push_back(e.origin + ": the SimGrid re-simulation of candidate " + std::to_string(e.index) +
                                      " failed; its analytic row is kept");
          }
          return;
        }
        if (fingerprinted)
          throw ScenarioError(e.origin, "conflicts with " + p.origin + ": candidate " + std::to_string(e.index) + " of sweep " +
                                            fingerprints_[static_cast<std::size_t>(e.sweep)] + " has two keys (\"" + p.key +
                                            "\" and \"" + e.key + "\")");
      }
      flush();
    }
    pending_ = std::move(e);
  }

  void finish() {
    if (pending_) flush();
    close_sweep();
  }

 private:
  void flush() {
    Entry& p = *pending_;
    if (p.sweep != sweep_) {
      close_sweep();
      sweep_ = p.sweep;
      next_index_ = 0;
      seen_ = 0;
    }
    if (p.index != last_index_ || p.sweep != last_sweep_) {
      for (std::int64_t i = next_index_; i < p.index && missing_examples_.size() < 5; ++i) missing_examples_.push_back(i);
      next_index_ = p.index < INT64_MAX ? p.index + 1 : p.index;
      ++seen_;
      last_index_ = p.index;
      last_sweep_ = p.sweep;
    }
    out_ << p.line << '\n';
    ++stats_.rows;
    if (on_row_) on_row_(report::parse_row(p.line, p.origin));
    pending_.reset();
  }

  void close_sweep() {
    if (sweep_ >= 0 && coverage_) {
      const auto& fp = fingerprints_[static_cast<std::size_t>(sweep_)];
      const auto it = candidates_.find(sweep_);
      if (!fp.empty() && it != candidates_.end() && seen_ < it->second) {
        for (std::int64_t i = next_index_; i < it->second && missing_examples_.size() < 5; ++i) missing_examples_.push_back(i);
        std::string examples;
        for (const auto i : missing_examples_) examples += (examples.empty() ? "" : ", ") + std::to_string(i);
        stats_.warnings.push_back("sweep " + fp + ": " + std::to_string(it->second - seen_) + " of " + std::to_string(it->second) +
                                  " candidates have no row (first missing: " + examples + "); is a shard missing?");
      }
    }
    missing_examples_.clear();
  }

  std::ostream& out_;
  const std::function<void(const SweepRow&)>& on_row_;
  SortStats& stats_;
  const std::vector<std::string>& fingerprints_;
  const std::map<std::int64_t, std::int64_t>& candidates_;
  bool coverage_;
  std::optional<Entry> pending_;
  std::int64_t sweep_ = -1, next_index_ = 0, seen_ = 0, last_index_ = -1, last_sweep_ = -1;
  std::vector<std::int64_t> missing_examples_;
};

}  // namespace

std::vector<std::string> results_files(const std::vector<std::string>& inputs) {
  std::vector<std::string> files;
  for (const auto& in : inputs) {
    std::error_code ec;
    if (std::filesystem::is_directory(in, ec)) {
      std::vector<std::string> found;
      for (const auto& entry : std::filesystem::directory_iterator(in, ec)) {
        const auto name = entry.path().filename().string();
        if (entry.is_regular_file() && name.rfind("results", 0) == 0 && name.size() > 6 &&
            name.compare(name.size() - 6, 6, ".jsonl") == 0)
          found.push_back(entry.path().string());
      }
      std::sort(found.begin(), found.end());
      if (found.empty()) throw ScenarioError(in, "holds no results*.jsonl file");
      files.insert(files.end(), found.begin(), found.end());
    } else if (std::filesystem::exists(in, ec)) {
      files.push_back(in);
    } else {
      throw ScenarioError(in, "no such file or directory");
    }
  }
  return files;
}

SortStats sort_rows(const std::vector<std::string>& inputs, std::ostream& out, const std::function<void(const SweepRow&)>& on_row,
                    const SortOptions& options) {
  SortStats stats;
  std::map<std::string, std::int64_t> ordinal;
  std::vector<std::string> fingerprints;
  std::map<std::int64_t, std::int64_t> candidates;
  std::vector<Entry> chunk;
  std::size_t chunk_bytes = 0;
  Runs runs(options.run_dir.empty() ? std::filesystem::temp_directory_path().string() : options.run_dir);
  std::int64_t total = 0;
  for (const auto& f : inputs) {
    const auto scan = scan_rows(f, [&](SweepRow&& r, std::int64_t line) {
      const auto [it, added] = ordinal.emplace(r.sweep, static_cast<std::int64_t>(fingerprints.size()));
      if (added) fingerprints.push_back(r.sweep);
      if (r.sweep_candidates > 0) {
        auto& n = candidates[it->second];
        n = std::max(n, r.sweep_candidates);
      }
      Entry e{it->second, r.index, base_key(r.key), r.engine == "simgrid" ? 1 : 0, f + ":" + std::to_string(line), std::move(r.line)};
      chunk_bytes += entry_bytes(e);
      chunk.push_back(std::move(e));
      if (static_cast<std::int64_t>(chunk_bytes) >= options.chunk_bytes) {
        runs.write(chunk);
        chunk_bytes = 0;
      }
    });
    if (scan.truncated_tail) {
      if (scan.rows == 0) throw ScenarioError(f, "holds no results row (its only line is not a row)");
      stats.warnings.push_back(f + ":" + std::to_string(scan.truncated_line) +
                               ": ignored a last line without newline that is not a row (a write cut short)");
    }
    total += scan.rows;
  }
  if (total == 0) throw ScenarioError(inputs.size() == 1 ? inputs.front() : std::string("merge"), "no results rows in the input");

  Emitter emit(out, on_row, stats, fingerprints, candidates, options.check_coverage);
  if (runs.files().empty()) {
    std::sort(chunk.begin(), chunk.end(), before);
    for (auto& e : chunk) emit.push(std::move(e));
  } else {
    if (!chunk.empty()) runs.write(chunk);
    std::vector<std::ifstream> readers;
    readers.reserve(runs.files().size());
    std::vector<Entry> heads(runs.files().size());
    const auto later = [&heads](std::size_t a, std::size_t b) { return before(heads[b], heads[a]); };
    std::priority_queue<std::size_t, std::vector<std::size_t>, decltype(later)> queue(later);
    for (std::size_t i = 0; i < runs.files().size(); ++i) {
      readers.emplace_back(runs.files()[i], std::ios::binary);
      if (read_entry(readers[i], heads[i])) queue.push(i);
    }
    while (!queue.empty()) {
      const std::size_t i = queue.top();
      queue.pop();
      emit.push(std::move(heads[i]));
      if (read_entry(readers[i], heads[i])) queue.push(i);
    }
  }
  emit.finish();
  if (stats.duplicates > 0)
    stats.warnings.push_back("dropped " + std::to_string(stats.duplicates) +
                             " rows that repeat another row exactly (the same results given twice?)");
  return stats;
}

std::vector<SweepRow> merge_rows(const std::vector<std::string>& inputs, std::vector<std::string>* warnings) {
  std::vector<SweepRow> out;
  std::ostringstream sink;
  SortOptions o;
  o.check_coverage = true;
  const auto stats = sort_rows(results_files(inputs), sink, [&out](const SweepRow& r) { out.push_back(r); }, o);
  if (warnings != nullptr) warnings->insert(warnings->end(), stats.warnings.begin(), stats.warnings.end());
  return out;
}

}  // namespace stepsim::driver
