#pragma once
// Loading scenarios: JSON text (or a file) plus "--set key=value" overrides -> validated Scenario.
// Every failure throws stepsim::ScenarioError naming the JSON path and the reason.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "stepsim/scenarios/scenario.hpp"

namespace stepsim::scenarios {

// An override "parallel.tp=4": the dotted path and the raw value text. The value is parsed as
// JSON when it parses (4, true, "x", {...}), otherwise taken as a string (1f1b, h100-sxm-80gb);
// the value null removes the key, which restores its default.
struct Override {
  std::string path;
  std::string value;
};

// Parses "a.b=c"; throws ScenarioError("--set", ...) when there is no '='.
[[nodiscard]] Override parse_override(const std::string& text);

// Loads from JSON text. `origin` names the source in messages (a file name or "<default>").
[[nodiscard]] Scenario load_scenario_text(const std::string& json_text, const std::vector<Override>& overrides = {},
                            const std::string& origin = "<scenario>");

// Largest input file stepsim reads (scenario, sweep, results): 64 MiB.
inline constexpr std::uintmax_t kMaxInputFileBytes = 64ull * 1024 * 1024;

// Reads a user's input file whole. Throws ScenarioError(file, ...) when it does not exist or
// cannot be read, is a directory, is not a regular file (a device, a FIFO), or is larger than
// kMaxInputFileBytes. `what` names the kind of file in messages ("scenario file"). The file "-"
// is standard input. JSON inputs may hold // and /* */ comments.
[[nodiscard]] std::string read_input_file(const std::string& file, const std::string& what = "file");
// The lines of a regular file of any size, one at a time (memory: one line), with their 1-based
// number and whether a newline ended them; `visit` returns false to stop. The same checks and
// messages as read_input_file, without its size limit.
void for_each_input_line(const std::string& file, const std::string& what,
                         const std::function<bool(const std::string& line, std::int64_t number, bool terminated)>& visit);

// Loads a file; throws ScenarioError(path, "cannot open ...") when it cannot be read (see
// read_input_file).
[[nodiscard]] Scenario load_scenario_file(const std::string& file, const std::vector<Override>& overrides = {});

// The built-in default scenario (Llama-3.1-70B on 16 x DGX H100).
[[nodiscard]] std::string default_scenario_text();
// The default scenario with overrides; its name's GPU count follows them ("...-32" with
// --set cluster.nodes=4) unless an override names it.
[[nodiscard]] Scenario load_default_scenario(const std::vector<Override>& overrides = {});

// A token count: a number, or a number with a suffix K, M, B (or G) or T ("15T", "300B", "2.5 M").
// nullopt when the text is not one.
[[nodiscard]] std::optional<double> parse_token_count(const std::string& text);

// Preset lookup (names as in scenarios/presets/). Throw ScenarioError(path, "unknown preset ...").
[[nodiscard]] ModelSpec model_preset(const std::string& name, const std::string& path = "model");
// The cluster of a cluster preset (one node unless the preset says otherwise); ScenarioError(path, ...) for an unknown name.
[[nodiscard]] ClusterSpec cluster_preset(const std::string& name, const std::string& path = "cluster");
[[nodiscard]] GpuSpec gpu_preset(const std::string& name, const std::string& path = "cluster.gpu");
[[nodiscard]] std::vector<std::string> model_preset_names();
[[nodiscard]] std::vector<std::string> gpu_preset_names();
[[nodiscard]] std::vector<std::string> cluster_preset_names();
// GPU presets with an efficiency file (scenarios/presets/efficiency/<gpu>.json); gpu_preset(name)
// carries it as its efficiency.
[[nodiscard]] std::vector<std::string> efficiency_preset_names();
// Software stack presets (scenarios/presets/software/<name>.json).
[[nodiscard]] std::vector<std::string> software_preset_names();

}  // namespace stepsim::scenarios
