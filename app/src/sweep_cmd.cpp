// `stepsim sweep`, `stepsim merge` and `stepsim compare`.

#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "commands.hpp"
#include "stepsim/driver/mpi.hpp"
#include "stepsim/driver/simulate.hpp"
#include "stepsim/driver/sweep.hpp"
#include "stepsim/report/compare.hpp"
#include "stepsim/report/report.hpp"
#include "stepsim/scenarios/error.hpp"
#include "stepsim/scenarios/load.hpp"
#include "stepsim/scenarios/sweep.hpp"

namespace stepsim::app {

namespace {

// "I/N" with 0 <= I < N.
void parse_shard(const std::string& text, std::int64_t& index, std::int64_t& count) {
  const auto slash = text.find('/');
  try {
    if (slash == std::string::npos) throw std::invalid_argument("no slash");
    std::size_t used = 0;
    index = std::stoll(text.substr(0, slash), &used);
    if (used != slash) throw std::invalid_argument("index");
    const std::string n = text.substr(slash + 1);
    count = std::stoll(n, &used);
    if (used != n.size()) throw std::invalid_argument("count");
  } catch (const std::exception&) {
    throw ScenarioError("--shard", "expected I/N (e.g. 0/4), got \"" + text + "\"");
  }
  if (count < 1 || index < 0 || index >= count) throw ScenarioError("--shard", "expected I/N with 0 <= I < N, got \"" + text + "\"");
}

int default_jobs() {
  const long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

void register_sweep_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("sweep", "every candidate of a sweep file: memory prune, simulation, ranking");
  struct Args {
    std::string file;
    int jobs = default_jobs();
    bool resume = false;
    std::string shard;
    std::string out = "sweep-out";
    std::int64_t refine = 0;
    std::string prune = "stepsim";
    std::int64_t max_candidates = driver::kDefaultMaxCandidates;
    bool quiet = false;
    bool mpi = false;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("sweep", a->file, "sweep JSON file (base scenario, axes, constraints)")->required();
  auto* jobs = cmd->add_option("-j,--jobs", a->jobs, "worker processes, at least 1 (default: the number of CPUs)");
  cmd->add_flag("--resume", a->resume, "continue the results file in --out: skip candidates already there");
  auto* shard = cmd->add_option("--shard", a->shard, "run only candidates with index % N == I (I/N), into results.shard-I-of-N.jsonl");
  cmd->add_option("--out", a->out, "output directory (default: sweep-out)");
  cmd->add_option("--refine", a->refine, "re-simulate the best K (by tokens/s) with the SimGrid engine")->check(CLI::Validator(
          [](std::string& v) { return v.find_first_not_of("0123456789") == std::string::npos ? std::string() : "must be a whole number >= 0, got " + v; },
          "K >= 0"));
  cmd->add_option("--prune", a->prune,
                  "memory prune: stepsim (stepsim peak <= GPU memory - memory.headroom_gib) or paper-usable-fraction (paper estimate "
                  "<= memory.usable_fraction x GPU memory; also named paper-80)")
      ->check(CLI::IsMember({"stepsim", "paper-usable-fraction", "paper-80"}));
  cmd->add_option("--max-candidates", a->max_candidates,
                  "refuse a sweep (or shard) with more candidates than this (default: 1,000,000; the axes may make at most 100 "
                  "combinations per candidate)");
  cmd->add_flag("-q,--quiet", a->quiet, "no progress or informational lines on stderr");
  cmd->add_flag("--mpi", a->mpi,
                "under mpirun: rank 0 hands candidates to the other ranks and writes the results (the same files as -j on one machine)")
      ->excludes(shard)
      ->excludes(jobs);
  cmd->callback([a]() {
    if (a->jobs < 1) throw ScenarioError("-j", "must be at least 1, got " + std::to_string(a->jobs));
    // Under --mpi every rank runs this command: rank 0 the sweep, the others its workers.
    std::optional<driver::MpiSession> mpi;
    if (a->mpi) {
      mpi.emplace();
      if (mpi->rank() != 0) {
        driver::serve_sweep_worker(*mpi);
        return;
      }
    }
    const auto spec = scenarios::load_sweep_file(a->file);
    driver::SweepOptions o;
    o.jobs = a->jobs;
    o.resume = a->resume;
    if (!a->shard.empty()) parse_shard(a->shard, o.shard_index, o.shard_count);
    o.out_dir = a->out;
    o.refine = a->refine;
    o.prune = driver::parse_prune_rule(a->prune);
    o.max_candidates = a->max_candidates;
    o.version = kVersion;
    o.quiet = a->quiet;
    o.progress = !a->quiet && ::isatty(STDERR_FILENO) != 0;
    if (mpi) {
      o.mpi = &*mpi;
      o.jobs = 1;  // only when the job has one rank: one worker process forked here
    }
    const auto outcome = driver::run_sweep(spec, o);
    std::cout << outcome.table;
    std::cout.flush();
    if (!a->quiet) std::cerr << "stepsim sweep: rows in " << outcome.results_file << ", ranking in " << outcome.summary_file << "\n";
  });
}

void register_merge(CLI::App& app) {
  auto* cmd = app.add_subcommand("merge", "join sweep results files (shards) into one, sorted by candidate, one row per key");
  auto inputs = std::make_shared<std::vector<std::string>>();
  auto out = std::make_shared<std::string>();
  auto summary = std::make_shared<std::string>();
  cmd->add_option("inputs", *inputs, "results .jsonl files or sweep output directories")->required();
  cmd->add_option("--out", *out, "merged results file (default: stdout)");
  cmd->add_option("--summary", *summary, "also write the ranking (Markdown) to this file");
  cmd->callback([inputs, out, summary]() {
    // The merged rows stream from the sorted runs to the output; the ranking is built as they pass.
    driver::Ranking ranking;
    driver::SortOptions so;
    so.check_coverage = true;
    const auto files = driver::results_files(*inputs);
    const auto on_row = [&ranking](const driver::SweepRow& r) { ranking.add(r); };
    driver::SortStats stats;
    if (out->empty() || *out == "-") {
      stats = driver::sort_rows(files, std::cout, on_row, so);
      std::cout.flush();
      for (const auto& w : stats.warnings) std::cerr << "stepsim merge: warning: " << w << "\n";
      if (!summary->empty()) emit_all({{*summary, ranking.markdown({"# Merged sweep", ""})}});
    } else {
      // Rows and summary are written all or none; the ranking is built while the rows are written
      // (or, when the rows go to a device written last, by a sort of its own).
      bool ranked = false;
      std::vector<Output> outputs{{*out, support::ContentWriter([&](std::ostream& o) {
                                     stats = driver::sort_rows(files, o, on_row, so);
                                     ranked = true;
                                   })}};
      if (!summary->empty())
        outputs.emplace_back(*summary, support::ContentWriter([&](std::ostream& o) {
                               if (!ranked) {
                                 std::ostringstream discard;
                                 stats = driver::sort_rows(files, discard, on_row, so);
                                 ranked = true;
                               }
                               o << ranking.markdown({"# Merged sweep", ""});
                             }));
      emit_all(outputs);
      for (const auto& w : stats.warnings) std::cerr << "stepsim merge: warning: " << w << "\n";
    }
    if (!out->empty() && *out != "-") std::cerr << "stepsim merge: " << stats.rows << " rows in " << *out << "\n";
  });
}

void register_compare(CLI::App& app) {
  auto* cmd = app.add_subcommand("compare", "side by side: step time, MFU, bubble, memory, OOM, time and cost to train");
  auto files = std::make_shared<std::vector<std::string>>();
  auto sets = std::make_shared<std::vector<std::string>>();
  auto o = std::make_shared<OutputArgs>();
  cmd->add_option("scenarios", *files, "scenario files (at most 26); with one file (or none: the default), --set defines the second column; several columns are labelled A, B, C, ... with a legend");
  add_set_option(*cmd, *sets, "override a field: with one scenario, of the second column; with several, or with --variant, of all");
  auto variants = std::make_shared<std::vector<std::string>>();
  add_variant_option(*cmd, *variants);
  add_format_option(*cmd, o->format, {"table", "md", "csv", "latex", "json"}, "table, md, csv, latex or json");
  add_engine_option(*cmd, o->engine);
  add_out_option(*cmd, o->out);
  cmd->callback([=]() {
    const auto overrides = parse_overrides(*sets);
    std::string set_label;
    for (const auto& s : *sets) set_label += (set_label.empty() ? "" : ", ") + s;
    // Each column's scenario and what it is; with several columns, the columns are labelled A,
    // B, C, ... and a legend says what each is.
    struct Input {
      std::string description;
      scenarios::Scenario scenario;
    };
    std::vector<Input> inputs;
    const auto load_one = load_scenario;
    const auto name_of = [](const std::string& file) { return file.empty() ? std::string("default") : file; };
    const std::string with_sets = set_label.empty() ? "" : " + " + set_label;
    if (!variants->empty()) {
      // Columns A (the scenario with --set), B, C, ... (with each variant's overrides on top).
      if (files->size() > 1) throw ScenarioError("--variant", "applies to one scenario (or the default), not to several files");
      if (variants->size() > 25) throw ScenarioError("--variant", "at most 25 variants (columns B to Z)");
      const std::string file = files->empty() ? std::string() : files->front();
      inputs.push_back({name_of(file) + with_sets, load_one(file, overrides)});
      for (const auto& variant : *variants) {
        auto ov = overrides;
        for (const auto& v : parse_variant(variant)) ov.push_back(v);
        inputs.push_back({"A + " + variant, load_one(file, ov)});
      }
    } else if (files->size() <= 1) {
      const std::string file = files->empty() ? std::string() : files->front();
      inputs.push_back({name_of(file), load_one(file, {})});
      if (!overrides.empty()) inputs.push_back({"A + " + set_label, load_one(file, overrides)});
    } else {
      if (files->size() > 26) throw ScenarioError("scenarios", "at most 26 scenario files (columns A to Z)");
      for (const auto& f : *files) inputs.push_back({f + with_sets, load_one(f, overrides)});
    }
    std::string legend;
    const auto label_of = [&](std::size_t i) {
      return inputs.size() == 1 ? inputs[i].description : std::string(1, static_cast<char>('A' + i));
    };
    if (inputs.size() > 1)
      for (std::size_t i = 0; i < inputs.size(); ++i) legend += label_of(i) + ": " + inputs[i].description + "\n";
    driver::SimulateOptions so;
    so.engine = engine_choice(o->engine);
    std::vector<report::CompareColumn> cols;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      auto report = driver::simulate(inputs[i].scenario, so).report;
      note_engine("compare", report);
      cols.push_back({label_of(i), std::move(inputs[i].scenario), std::move(report)});
    }
    // The provenance of LaTeX (a comment line) and CSV (FILE.meta.json beside --out FILE.csv).
    std::string provenance = std::string("stepsim ") + kVersion + ":";
    for (std::size_t i = 0; i < cols.size(); ++i) provenance += (i ? "; " : " ") + cols[i].label + " = " + cols[i].report.summary;
    for (std::size_t p = legend.find('\n'), from = 0; p != std::string::npos; from = p + 1, p = legend.find('\n', from))
      provenance += "; " + legend.substr(from, p - from);
    const std::string& f = o->format;
    const std::string text = f == "json"    ? report::compare_json(cols)
                             : f == "csv"   ? report::compare_csv(cols)
                             : f == "latex" ? report::compare_latex(cols, provenance)
                             : f == "md"    ? report::compare_markdown(cols) + (legend.empty() ? "" : "\n" + legend)
                                            : report::compare_table(cols) + (legend.empty() ? "" : "\n" + legend);
    std::vector<Output> outputs{{o->out, text}};
    if (f == "csv") add_csv_meta(outputs, o->out, report::csv_meta_json(kVersion, "comparison", provenance));
    emit_all(outputs);
  });
}

}  // namespace

void register_sweep(CLI::App& app) {
  register_sweep_command(app);
  register_merge(app);
  register_compare(app);
}

}  // namespace stepsim::app
