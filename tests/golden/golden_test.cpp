// Golden end-to-end outputs: every case of cases.txt runs the stepsim executable from the source
// directory and compares its standard output (and the files it writes under @OUT@) with
// tests/golden/<case>/. JSON and JSON-lines outputs compare structurally, numbers to a relative
// 1e-9 (so that a refactor that reorders floating-point sums still passes); everything else must
// match byte for byte. STEPSIM_GOLDEN_UPDATE=1 rewrites the expected files (tests/golden/update.sh).
// The README's sample outputs are the same files: a code block right after a line
// `<!-- golden: CASE -->` (or `<!-- golden: CASE lines A-B -->` for an excerpt) must hold the
// case's standard output; the update rewrites those blocks too.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "../common/scratch.hpp"

namespace fs = std::filesystem;

namespace {

struct Case {
  std::string name;
  std::string args;
};

using test_support::slurp;

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return {};
  const auto e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

std::vector<Case> read_cases(const fs::path& file) {
  std::vector<Case> cases;
  std::istringstream in(slurp(file));
  std::string line;
  while (std::getline(in, line)) {
    if (trim(line).empty() || trim(line)[0] == '#') continue;
    const auto bar = line.find('|');
    REQUIRE_MESSAGE(bar != std::string::npos, "cases.txt line without '|': " << line);
    cases.push_back({trim(line.substr(0, bar)), trim(line.substr(bar + 1))});
  }
  return cases;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (auto pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size())) s.replace(pos, from.size(), to);
  return s;
}

// Runs `stepsim ARGS` in the source directory; returns the exit status and standard output.
std::pair<int, std::string> run_stepsim(const std::string& args) {
  const std::string cmd = std::string("cd '") + STEPSIM_SOURCE_DIR + "' && '" + STEPSIM_BINARY_DIR + "/app/stepsim' " + args;
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  std::array<char, 4096> buf{};
  std::size_t got = 0;
  while ((got = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), got);
  const int st = pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

// Structural equality, numbers to a relative tolerance. Returns an empty string or the first difference.
std::string json_diff(const nlohmann::json& a, const nlohmann::json& b, const std::string& path) {
  if (a.is_number() && b.is_number()) {
    const double x = a.get<double>();
    const double y = b.get<double>();
    if (std::abs(x - y) <= 1e-9 * std::max(std::abs(x), std::abs(y)) + 1e-300) return {};
    return path + ": expected " + a.dump() + ", got " + b.dump();
  }
  if (a.type() != b.type()) return path + ": expected " + a.dump() + ", got " + b.dump();
  if (a.is_object()) {
    if (a.size() != b.size()) return path + ": expected keys " + std::to_string(a.size()) + ", got " + std::to_string(b.size());
    for (auto it = a.begin(); it != a.end(); ++it) {
      if (!b.contains(it.key())) return path + "." + it.key() + ": missing";
      if (auto d = json_diff(it.value(), b.at(it.key()), path + "." + it.key()); !d.empty()) return d;
    }
    return {};
  }
  if (a.is_array()) {
    if (a.size() != b.size()) return path + ": expected " + std::to_string(a.size()) + " elements, got " + std::to_string(b.size());
    for (std::size_t i = 0; i < a.size(); ++i)
      if (auto d = json_diff(a[i], b[i], path + "[" + std::to_string(i) + "]"); !d.empty()) return d;
    return {};
  }
  return a == b ? std::string{} : path + ": expected " + a.dump() + ", got " + b.dump();
}

// Parses `text` as one JSON document or as JSON lines; false when it is neither.
bool parse_json_or_lines(const std::string& text, std::vector<nlohmann::json>& docs) {
  docs.clear();
  if (nlohmann::json::accept(text)) {
    docs.push_back(nlohmann::json::parse(text));
    return true;
  }
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (!nlohmann::json::accept(line)) return false;
    docs.push_back(nlohmann::json::parse(line));
  }
  return !docs.empty();
}

// Empty when `actual` matches `expected`, else a description of the first difference.
std::string compare_text(const std::string& expected, const std::string& actual) {
  std::vector<nlohmann::json> e;
  std::vector<nlohmann::json> a;
  if (parse_json_or_lines(expected, e) && parse_json_or_lines(actual, a)) {
    if (e.size() != a.size()) return "expected " + std::to_string(e.size()) + " JSON documents, got " + std::to_string(a.size());
    for (std::size_t i = 0; i < e.size(); ++i)
      if (auto d = json_diff(e[i], a[i], "doc" + std::to_string(i)); !d.empty()) return d;
    return {};
  }
  if (expected == actual) return {};
  std::istringstream es(expected);
  std::istringstream as(actual);
  std::string el;
  std::string al;
  for (int line = 1;; ++line) {
    const bool he = static_cast<bool>(std::getline(es, el));
    const bool ha = static_cast<bool>(std::getline(as, al));
    if (!he && !ha) return "differs (line endings)";
    if (!he || !ha || el != al)
      return "line " + std::to_string(line) + ":\n  expected: " + (he ? el : "<end>") + "\n  got:      " + (ha ? al : "<end>");
  }
}

void write_file(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream(file, std::ios::binary) << text;
}

}  // namespace

TEST_CASE("golden outputs of run, memory, compare, sweep, report and validate") {
  const fs::path golden = fs::path(STEPSIM_SOURCE_DIR) / "tests" / "golden";
  const bool update = std::getenv("STEPSIM_GOLDEN_UPDATE") != nullptr;
  const auto cases = read_cases(golden / "cases.txt");
  REQUIRE(cases.size() >= 10);
  for (const auto& c : cases) {
    CAPTURE(c.name);
    const fs::path out_dir = test_support::fresh_dir("golden", c.name);
    const auto [status, stdout_text] = run_stepsim(replace_all(c.args, "@OUT@", out_dir.string()));
    REQUIRE_MESSAGE(status == 0, "stepsim " << c.args << " exited with " << status);
    std::vector<std::pair<std::string, std::string>> outputs{{"stdout", stdout_text}};
    for (const auto& e : fs::directory_iterator(out_dir)) outputs.emplace_back(e.path().filename().string(), slurp(e.path()));
    const fs::path expected_dir = golden / c.name;
    if (update) {
      fs::remove_all(expected_dir);
      for (const auto& [file, text] : outputs) write_file(expected_dir / file, text);
      continue;
    }
    REQUIRE_MESSAGE(fs::is_directory(expected_dir), "no golden files for " << c.name << ": run tests/golden/update.sh");
    std::size_t expected_files = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(expected_dir)) ++expected_files;
    CHECK(expected_files == outputs.size());
    for (const auto& [file, text] : outputs) {
      CAPTURE(file);
      REQUIRE_MESSAGE(fs::exists(expected_dir / file), "unexpected output file " << file);
      const auto diff = compare_text(slurp(expected_dir / file), text);
      CHECK_MESSAGE(diff.empty(), c.name << "/" << file << ": " << diff);
    }
  }
  fs::remove_all(test_support::scratch_dir("golden"));
}

namespace {

// Lines first..last (1-based, inclusive) of `text`, each with its newline; all lines when last == 0.
std::string line_range(const std::string& text, std::size_t first, std::size_t last) {
  std::istringstream in(text);
  std::string line;
  std::string out;
  for (std::size_t n = 1; std::getline(in, line); ++n)
    if (n >= first && (last == 0 || n <= last)) out += line + "\n";
  return out;
}

struct ReadmeSample {
  std::string name;
  std::size_t first = 1;
  std::size_t last = 0;
  std::size_t begin = 0;  // offset of the block's text in the README
  std::size_t end = 0;    // offset of its closing fence
};

std::vector<ReadmeSample> readme_samples(const std::string& readme) {
  std::vector<ReadmeSample> samples;
  const std::string marker = "<!-- golden: ";
  for (auto pos = readme.find(marker); pos != std::string::npos; pos = readme.find(marker, pos + 1)) {
    const auto close = readme.find(" -->", pos);
    REQUIRE(close != std::string::npos);
    std::istringstream spec(readme.substr(pos + marker.size(), close - pos - marker.size()));
    ReadmeSample s;
    std::string word;
    spec >> s.name >> word;
    if (word == "lines") {
      std::string range;
      spec >> range;
      const auto dash = range.find('-');
      REQUIRE(dash != std::string::npos);
      s.first = std::stoul(range.substr(0, dash));
      s.last = std::stoul(range.substr(dash + 1));
    }
    const auto fence = readme.find("```", close);
    REQUIRE(fence != std::string::npos);
    s.begin = readme.find('\n', fence) + 1;
    s.end = readme.find("```", s.begin);
    REQUIRE(s.end != std::string::npos);
    samples.push_back(s);
  }
  return samples;
}

}  // namespace

TEST_CASE("the README's sample outputs are the golden outputs") {
  const fs::path root(STEPSIM_SOURCE_DIR);
  const bool update = std::getenv("STEPSIM_GOLDEN_UPDATE") != nullptr;
  std::string readme = slurp(root / "README.md");
  auto samples = readme_samples(readme);
  REQUIRE(samples.size() >= 2);
  // Back to front, so that rewriting one block leaves the offsets of the earlier ones valid.
  std::reverse(samples.begin(), samples.end());
  for (const auto& s : samples) {
    CAPTURE(s.name);
    const auto golden = line_range(slurp(root / "tests" / "golden" / s.name / "stdout"), s.first, s.last);
    REQUIRE_MESSAGE(!golden.empty(), "no golden output for the README sample " << s.name);
    if (update) readme.replace(s.begin, s.end - s.begin, golden);
    else CHECK_MESSAGE(readme.substr(s.begin, s.end - s.begin) == golden, "README sample " << s.name << " differs from tests/golden");
  }
  if (update) write_file(root / "README.md", readme);
}

namespace {

// The cells of a Markdown table row ("| a | b |" -> {"a", "b"}), trimmed.
std::vector<std::string> row_cells(const std::string& line) {
  std::vector<std::string> cells;
  std::size_t pos = line.find('|');
  while (pos != std::string::npos) {
    const auto next = line.find('|', pos + 1);
    if (next == std::string::npos) break;
    cells.push_back(trim(line.substr(pos + 1, next - pos - 1)));
    pos = next;
  }
  return cells;
}

// "2.2 %" -> 2.2; "-" -> NaN.
double percent_cell(const std::string& cell) { return cell == "-" ? std::nan("") : std::stod(cell); }

}  // namespace

TEST_CASE("the README's validation table has the golden validate figures (records, MAPE, max, Spearman, top 5 in top 8)") {
  // Its fitted and cross-validated columns come from `stepsim validate --cross-validate`, too slow
  // for the suite; the first columns must be what `stepsim validate` prints (tests/golden/validate-json).
  INFO("after a model change, paste the table of `stepsim validate --cross-validate --format md` into the README");
  const fs::path root(STEPSIM_SOURCE_DIR);
  const std::string readme = slurp(root / "README.md");
  const std::string header = "| set | table | records | MAPE | max | Spearman | top 5/8 |";
  const auto start = readme.find(header);
  REQUIRE(start != std::string::npos);
  std::istringstream in(readme.substr(start));
  std::string line;
  std::vector<std::vector<std::string>> rows;
  for (std::size_t n = 0; std::getline(in, line) && line.rfind('|', 0) == 0; ++n)
    if (n >= 2) rows.push_back(row_cells(line));
  const auto golden = nlohmann::json::parse(slurp(root / "tests" / "golden" / "validate-json" / "stdout"));
  std::size_t expected_rows = 0;
  for (const auto& set : golden.at("sets")) {
    // The table is of step times: a set of memory records (Megatron-LM's CI peaks) is not in it.
    if (!set.at("records").empty() && set.at("records").front().contains("measured_peak_allocated_gib")) continue;
    std::vector<std::pair<std::string, const nlohmann::json*>> groups{{"(whole set)", &set}};
    // A set of one table has its whole-set row only.
    if (set.at("tables").size() > 1)
      for (const auto& t : set.at("tables")) groups.emplace_back(t.at("name").get<std::string>(), &t);
    for (const auto& [table, g] : groups) {
      ++expected_rows;
      const auto name = set.at("name").get<std::string>();
      CAPTURE(name);
      CAPTURE(table);
      const auto it = std::find_if(rows.begin(), rows.end(), [&](const auto& r) { return r.size() >= 7 && r[0] == name && r[1] == table; });
      REQUIRE_MESSAGE(it != rows.end(), "the README's validation table has no row for this set and table");
      const auto& r = *it;
      CHECK(r[2] == std::to_string(g->at("records_count").get<long long>()));
      CHECK(std::fabs(percent_cell(r[3]) - 100 * g->at("mape").get<double>()) <= 0.05 + 1e-9);
      CHECK(std::fabs(percent_cell(r[4]) - 100 * g->at("max_abs_error").get<double>()) <= 0.05 + 1e-9);
      const auto& rho = g->at("spearman");
      if (rho.is_null())
        CHECK(r[5] == "-");
      else
        CHECK(std::fabs(std::stod(r[5]) - rho.get<double>()) <= 0.0005 + 1e-9);
      const auto& top = g->at("top5_measured_in_top8_predicted");
      CHECK(r[6] == (top.is_null() ? std::string("-") : std::to_string(top.get<long long>()) + "/5"));
    }
  }
  CHECK(rows.size() == expected_rows);
}
