// Scenario loading: JSON -> Scenario, strict (unknown keys are errors), with defaults, presets,
// unit conversion and the cross-field rules of the schema (scenarios/README.md).

#include "stepsim/scenarios/load.hpp"

#include "stepsim/scenarios/import.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string_view>

#include <nlohmann/json.hpp>

#include "stepsim/scenarios/error.hpp"
#include "stepsim/scenarios/params.hpp"
#include "json_text.hpp"
#include "load_parts.hpp"

namespace stepsim::scenarios {

namespace detail {
const std::map<std::string, std::string_view>& embedded_files();
}

namespace {

using Json = nlohmann::json;

std::string join(const std::string& path, const std::string& key) { return path.empty() ? key : path + "." + key; }

const char* type_name(const Json& j) { return detail::json_type_name(j); }

// Reads the keys of one JSON object; remembers which were read so that finish() can reject the rest.
// `spec` is the object's key in the parameter table (params.hpp), which the *_param readers take
// their defaults and ranges from; `path` names the object in messages.
class Reader {
 public:
  Reader(const Json& j, std::string path, std::string spec = {}) : j_(j), path_(std::move(path)), spec_(std::move(spec)) {
    if (!j_.is_object()) throw ScenarioError(path_.empty() ? "<root>" : path_, std::string("must be an object, got ") + type_name(j_));
  }

  bool has(const std::string& key) const { return j_.contains(key); }
  std::string path(const std::string& key) const { return join(path_, key); }

  const Json* raw(const std::string& key) {
    auto it = j_.find(key);
    if (it == j_.end()) return nullptr;
    seen_.push_back(&it.key());
    return &*it;
  }

  // Integer in [lo, hi].
  std::int64_t integer(const std::string& key, std::optional<std::int64_t> def, std::int64_t lo, std::int64_t hi) {
    const Json* v = raw(key);
    if (v == nullptr) {
      if (!def) throw ScenarioError(path(key), "is required");
      return *def;
    }
    std::int64_t x = 0;
    if (v->is_number_unsigned() && v->get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      throw ScenarioError(path(key), "is absurdly large (" + v->dump() + " > " + std::to_string(hi) + ")");
    } else if (v->is_number_integer()) {
      x = v->get<std::int64_t>();
    } else if (v->is_number_float() && std::isfinite(v->get<double>()) && std::floor(v->get<double>()) == v->get<double>() &&
               std::fabs(v->get<double>()) < 9e15) {
      x = static_cast<std::int64_t>(v->get<double>());
    } else if (v->is_number()) {
      throw ScenarioError(path(key), "must be an integer, got " + v->dump());
    } else {
      throw ScenarioError(path(key), std::string("must be an integer, got ") + type_name(*v));
    }
    if (x < lo) throw ScenarioError(path(key), "must be at least " + std::to_string(lo) + ", got " + std::to_string(x));
    if (x > hi) throw ScenarioError(path(key), "is absurdly large (" + std::to_string(x) + " > " + std::to_string(hi) + ")");
    return x;
  }

  // Finite number in (lo, hi] (lo exclusive when lo_exclusive).
  double number(const std::string& key, std::optional<double> def, double lo, double hi, bool lo_exclusive = true) {
    const Json* v = raw(key);
    if (v == nullptr) {
      if (!def) throw ScenarioError(path(key), "is required");
      return *def;
    }
    if (!v->is_number()) throw ScenarioError(path(key), std::string("must be a number, got ") + type_name(*v));
    return in_range(key, v->get<double>(), lo, hi, lo_exclusive);
  }

  // `x` when it lies in (lo, hi] (lo exclusive when lo_exclusive).
  double in_range(const std::string& key, double x, double lo, double hi, bool lo_exclusive) const {
    if (!std::isfinite(x)) throw ScenarioError(path(key), "must be finite");
    if (lo_exclusive ? !(x > lo) : !(x >= lo)) {
      std::ostringstream os;
      os << "must be " << (lo_exclusive ? "greater than " : "at least ") << lo << ", got " << x;
      throw ScenarioError(path(key), os.str());
    }
    if (x > hi) {
      std::ostringstream os;
      os << "is absurdly large (" << x << " > " << hi << ")";
      throw ScenarioError(path(key), os.str());
    }
    return x;
  }

  // The declared parameter spec.key: its default (or `def` where the table describes a default
  // derived from other fields) and its range.
  const Param& param(const std::string& key) const { return parameter(join(spec_, key)); }

  std::int64_t int_param(const std::string& key, std::optional<std::int64_t> def = std::nullopt) {
    const Param& p = param(key);
    if (!def && p.value) def = static_cast<std::int64_t>(*p.value);
    return integer(key, def, static_cast<std::int64_t>(p.min), static_cast<std::int64_t>(p.max));
  }

  double num_param(const std::string& key, std::optional<double> def = std::nullopt) {
    const Param& p = param(key);
    if (!def) def = p.value;
    // A token count may be written with a suffix: "15T", "300B".
    if (const auto it = j_.find(key); p.unit == "tokens" && it != j_.end() && it->is_string()) {
      seen_.push_back(&it.key());
      const auto tokens = parse_token_count(it->get<std::string>());
      if (!tokens) throw ScenarioError(path(key), "must be a number of tokens (15000000000000, 15T, 300B, 2.5M), got \"" + it->get<std::string>() + "\"");
      return in_range(key, *tokens, p.min, p.max, p.min_exclusive);
    }
    return number(key, def, p.min, p.max, p.min_exclusive);
  }

  bool bool_param(const std::string& key, std::optional<bool> def = std::nullopt) {
    const Param& p = param(key);
    return boolean(key, def ? *def : p.value.value_or(0) != 0);
  }

  std::string string_param(const std::string& key) {
    const Param& p = param(key);
    return string(key, p.default_text == "required" ? std::nullopt : std::optional<std::string>(p.default_text));
  }

  // A choice whose default is the option the table names.
  // The same with the options of an enumeration's name table.
  template <typename E, std::size_t N>
  E choice_param(const std::string& key, const NameTable<E, N>& names) {
    std::vector<std::pair<std::string, E>> options;
    for (const auto& n : names) options.emplace_back(std::string(n.name), n.value);
    return choice_param(key, options);
  }

  template <typename E>
  E choice_param(const std::string& key, const std::vector<std::pair<std::string, E>>& options) {
    const Param& p = param(key);
    for (const auto& [name, value] : options)
      if (name == p.default_text) return choice(key, value, options);
    throw InternalError("scenarios: the default of " + std::string(p.key) + " is none of its options");
  }

  bool boolean(const std::string& key, bool def) {
    const Json* v = raw(key);
    if (v == nullptr) return def;
    if (!v->is_boolean()) throw ScenarioError(path(key), std::string("must be true or false, got ") + type_name(*v));
    return v->get<bool>();
  }

  std::string string(const std::string& key, std::optional<std::string> def) {
    const Json* v = raw(key);
    if (v == nullptr) {
      if (!def) throw ScenarioError(path(key), "is required");
      return *def;
    }
    if (!v->is_string()) throw ScenarioError(path(key), std::string("must be a string, got ") + type_name(*v));
    return v->get<std::string>();
  }

  template <typename E>
  E choice(const std::string& key, E def, const std::vector<std::pair<std::string, E>>& options) {
    const Json* v = raw(key);
    if (v == nullptr) return def;
    if (!v->is_string()) throw ScenarioError(path(key), std::string("must be a string, got ") + type_name(*v));
    const auto s = v->get<std::string>();
    std::string allowed;
    for (const auto& [name, value] : options) {
      if (name == s) return value;
      allowed += (allowed.empty() ? "" : ", ") + name;
    }
    throw ScenarioError(path(key), "unknown value \"" + s + "\" (expected one of: " + allowed + ")");
  }

  void finish(const std::set<std::string>& also_allowed = {}) const {
    for (auto it = j_.begin(); it != j_.end(); ++it) {
      if (std::find(seen_.begin(), seen_.end(), &it.key()) == seen_.end() && also_allowed.count(it.key()) == 0)
        throw ScenarioError(path(it.key()), "unknown key");
    }
  }

 private:
  const Json& j_;
  std::string path_;
  std::string spec_;
  std::vector<const std::string*> seen_;  // the keys of j_ read (the object's own key strings)
};


const Json& preset_json(const std::string& kind, const std::string& name, const std::string& path) {
  static std::map<std::string, Json> cache;
  const std::string file = "presets/" + kind + "/" + name + ".json";
  auto it = cache.find(file);
  if (it != cache.end()) return it->second;
  const auto& files = detail::embedded_files();
  auto f = files.find(file);
  if (f == files.end()) {
    std::string names;
    const std::string prefix = "presets/" + kind + "/";
    for (const auto& [k, _] : files) {
      if (k.rfind(prefix, 0) == 0) names += (names.empty() ? "" : ", ") + k.substr(prefix.size(), k.size() - prefix.size() - 5);
    }
    throw ScenarioError(path, "unknown preset \"" + name + "\" (known: " + names + ")");
  }
  return cache.emplace(file, Json::parse(f->second)).first->second;
}

std::vector<std::string> preset_names(const std::string& kind) {
  std::vector<std::string> out;
  const std::string prefix = "presets/" + kind + "/";
  for (const auto& [k, _] : detail::embedded_files())
    if (k.rfind(prefix, 0) == 0) out.push_back(k.substr(prefix.size(), k.size() - prefix.size() - 5));
  return out;
}

// Keys whose value may be a preset name or an object ("model", "cluster.gpu", "gpu" inside a
// cluster object, and "software").
bool is_preset_ref_key(const std::string& key) { return key == "model" || key == "gpu" || key == "software"; }

Json merged(Json base, const Json& over);

// The value of `key` after `over` is merged onto `base`: objects recursively; an object that names
// no preset, onto a preset name, overrides that preset's fields ({"preset": name} merged with it);
// an object that names a preset replaces the old value; everything else replaces it.
Json merged_value(const std::string& key, const Json& base, const Json& over) {
  if (!over.is_object() || over.contains("preset")) return over;
  if (base.is_object()) {
    Json out = base;
    for (auto it = over.begin(); it != over.end(); ++it)
      out[it.key()] = out.contains(it.key()) ? merged_value(it.key(), out[it.key()], it.value()) : it.value();
    return out;
  }
  if (base.is_string() && is_preset_ref_key(key)) return merged_value(key, Json{{"preset", base}}, over);
  return over;
}

// Merges `over` into a copy of `base` (see merged_value). A "preset" key of `over` itself is
// skipped: `base` is that preset's content already.
Json merged(Json base, const Json& over) {
  for (auto it = over.begin(); it != over.end(); ++it) {
    if (it.key() == "preset") continue;
    base[it.key()] = base.contains(it.key()) ? merged_value(it.key(), base[it.key()], it.value()) : it.value();
  }
  return base;
}

// A preset reference ("name" or {"preset": "name", ...overrides}) resolved to one object.
Json resolve_preset_ref(const Json& j, const std::string& kind, const std::string& path) {
  if (j.is_string()) {
    Json out = preset_json(kind, j.get<std::string>(), path);
    out["name"] = j.get<std::string>();
    return out;
  }
  if (!j.is_object()) throw ScenarioError(path, std::string("must be a preset name or an object, got ") + type_name(j));
  if (!j.contains("preset")) return j;
  if (!j["preset"].is_string()) throw ScenarioError(path + ".preset", "must be a string");
  const auto name = j["preset"].get<std::string>();
  Json out = preset_json(kind, name, path + ".preset");
  out["name"] = name;
  return merged(out, j);
}


ModelSpec read_model(const Json& raw, const std::string& path) {
  const Json j = resolve_preset_ref(raw, "models", path);
  Reader r(j, path, "model");
  ModelSpec m;
  m.name = r.string_param("name");
  m.layers = r.int_param("layers");
  m.hidden = r.int_param("hidden");
  m.ffn_hidden = r.int_param("ffn_hidden");
  m.heads = r.int_param("heads");
  m.kv_heads = r.int_param("kv_heads", m.heads);
  m.vocab = r.int_param("vocab");
  m.tied_embeddings = r.bool_param("tied_embeddings");
  m.mlp = r.choice_param("mlp", kMlpNames);
  m.norm = r.choice_param("norm", kNormNames);
  m.bias = r.bool_param("bias");
  m.qk_norm = r.bool_param("qk_norm");
  r.finish({"source", "description"});
  if (m.hidden % m.heads != 0) throw ScenarioError(path + ".heads", "must divide hidden (" + std::to_string(m.hidden) + ")");
  if (m.heads % m.kv_heads != 0) throw ScenarioError(path + ".kv_heads", "must divide heads (" + std::to_string(m.heads) + ")");
  return m;
}

// An efficiency object (inline or the content of an efficiency file) read at `path`: each
// parameter it omits keeps the value of `base`; "kind" (default fitted) and "source" (the fit
// record) describe where its numbers come from. `source` names where the object was found.
Efficiency read_efficiency(const Json& j, const std::string& path, const Efficiency& base, const std::string& source) {
  Reader r(j, path, "cluster.gpu.efficiency");
  Efficiency e = base;
  bool complete = true;
  const auto param = [&](const char* key, double& value) {
    complete = complete && r.has(key);
    value = r.num_param(key, value);
  };
  param("gemm_max", e.gemm_max);
  param("attn_max", e.attn_max);
  param("hbm_eff", e.hbm_eff);
  param("comm_slowdown", e.comm_slowdown);
  // Optional: omitted, it keeps the value of `base` like the others; an efficiency that has none
  // gives the FP8 GEMMs gemm_max (Efficiency::fp8_gemm_fraction).
  if (r.has("gemm_fp8_max")) e.gemm_fp8_max = r.num_param("gemm_fp8_max");
  e.kind = r.choice_param("kind", kEfficiencyKindNames);
  e.fit = r.has("source") ? r.string("source", std::nullopt) : std::string();
  // As "source": an object that does not list its fitted parameters is not the fit of its base.
  e.fitted.clear();
  if (r.has("fitted")) {
    const std::string list = r.string("fitted", std::nullopt);
    std::size_t begin = 0;
    while (begin <= list.size()) {
      const auto comma = std::min(list.find(',', begin), list.size());
      const std::string name = list.substr(begin, comma - begin);
      const auto& known = efficiency_parameter_names();
      if (std::find(known.begin(), known.end(), name) == known.end())
      {
        std::string expected;
        for (const auto& k : known) expected += (expected.empty() ? "" : ", ") + k;
        throw ScenarioError(path + ".fitted", "unknown parameter '" + name + "' (expected a comma-separated list of " + expected + ")");
      }
      if (std::find(e.fitted.begin(), e.fitted.end(), name) != e.fitted.end())
        throw ScenarioError(path + ".fitted", "names '" + name + "' twice");
      e.fitted.push_back(name);
      begin = comma + 1;
    }
  }
  e.source = complete ? source : source + " over " + base.source;
  r.finish({"description"});
  return e;
}

const std::string kEfficiencyPresetDir = "presets/efficiency/";

// The efficiency file of a GPU preset (scenarios/presets/efficiency/<gpu>.json), if it has one.
std::optional<Efficiency> efficiency_of_preset(const std::string& gpu_preset, const GpuSpec& gpu) {
  if (detail::embedded_files().count(kEfficiencyPresetDir + gpu_preset + ".json") == 0) return std::nullopt;
  const Json& j = preset_json("efficiency", gpu_preset, "cluster.gpu.efficiency");
  const std::string file = "scenarios/" + kEfficiencyPresetDir + gpu_preset + ".json";
  return read_efficiency(j, file, default_efficiency(gpu), file);
}

// The GPU's efficiency: "efficiency" (an object, or the path of an efficiency file read now) over
// the GPU preset's efficiency file, else over default_efficiency.
Efficiency read_gpu_efficiency(const Json* value, const std::string& path, const std::string& gpu_preset, const GpuSpec& gpu) {
  Efficiency base = default_efficiency(gpu);
  if (!gpu_preset.empty())
    if (auto e = efficiency_of_preset(gpu_preset, gpu)) base = *e;
  if (value == nullptr) return base;
  if (value->is_object()) return read_efficiency(*value, path, base, path);
  if (!value->is_string())
    throw ScenarioError(path, std::string("must be an efficiency file path or an object, got ") + type_name(*value));
  const auto file = value->get<std::string>();
  const Json j = detail::parse_json_text(read_input_file(file, "efficiency file"), file);
  return read_efficiency(j, file, base, file);
}

GpuSpec read_gpu(const Json& raw, const std::string& path) {
  const Json j = resolve_preset_ref(raw, "gpus", path);
  std::string preset;
  if (raw.is_string()) preset = raw.get<std::string>();
  else if (raw.contains("preset")) preset = raw["preset"].get<std::string>();
  Reader r(j, path, "cluster.gpu");
  GpuSpec g;
  g.name = r.string_param("name");
  g.memory_bytes = r.num_param("memory_gib") * kGiB;
  g.peak_bf16_flops = r.num_param("peak_bf16_tflops") * 1e12;
  g.matmul_bf16_flops = r.num_param("matmul_bf16_tflops", g.peak_bf16_flops / 1e12) * 1e12;
  if (g.matmul_bf16_flops > g.peak_bf16_flops)
    throw ScenarioError(path + ".matmul_bf16_tflops", "exceeds the dense BF16 peak (" + std::to_string(g.peak_bf16_flops / 1e12) + " TFLOP/s)");
  g.peak_fp8_flops = r.num_param("peak_fp8_tflops") * 1e12;
  g.matmul_fp8_flops = r.has("matmul_fp8_tflops") ? r.num_param("matmul_fp8_tflops") * 1e12
                                                  : g.peak_fp8_flops * g.matmul_bf16_flops / g.peak_bf16_flops;
  if (g.matmul_fp8_flops > g.peak_fp8_flops)
    throw ScenarioError(path + ".matmul_fp8_tflops", "exceeds the dense FP8 peak (" + std::to_string(g.peak_fp8_flops / 1e12) + " TFLOP/s)");
  g.hbm_Bps = r.num_param("hbm_TBps") * 1e12;
  g.nvlink_Bps = r.num_param("nvlink_GBps") * 1e9;
  g.sms = r.int_param("sms");
  g.gemm_tile_m = r.int_param("gemm_tile_m");
  g.gemm_tile_n = r.int_param("gemm_tile_n");
  if ((g.gemm_tile_m == 0) != (g.gemm_tile_n == 0))
    throw ScenarioError(path + (g.gemm_tile_m == 0 ? ".gemm_tile_m" : ".gemm_tile_n"), "must be given with the other tile side (both 0: no tile quantization)");
  g.gemm_small_tile = r.int_param("gemm_small_tile");
  g.gemm_small_tile_efficiency = r.num_param("gemm_small_tile_efficiency");
  if (g.gemm_small_tile > 0 && g.gemm_tile_m == 0)
    throw ScenarioError(path + ".gemm_small_tile", "needs the large tile (gemm_tile_m and gemm_tile_n) it falls back from");
  g.gemm_k_overhead = r.num_param("gemm_k_overhead");
  g.architecture = r.choice_param("architecture", kGpuArchitectureNames);
  g.efficiency = read_gpu_efficiency(r.raw("efficiency"), path + ".efficiency", preset, g);
  r.finish({"source", "description"});
  return g;
}

ClusterSpec read_cluster(const Json& raw, const std::string& path) {
  if (!raw.is_object()) throw ScenarioError(path, std::string("must be an object, got ") + type_name(raw));
  Json j = raw;
  ClusterSpec c;
  if (j.contains("preset")) {
    if (!j["preset"].is_string()) throw ScenarioError(path + ".preset", "must be a string");
    c.preset = j["preset"].get<std::string>();
    Json base = preset_json("clusters", c.preset, path + ".preset");
    base.erase("source");
    j = merged(base, j);
    j.erase("preset");
  }
  Reader r(j, path, "cluster");
  const Json* gpu = r.raw("gpu");
  if (gpu == nullptr) throw ScenarioError(path + ".gpu", "is required (a GPU preset name or an object)");
  c.gpu = read_gpu(*gpu, path + ".gpu");
  c.gpus_per_node = r.int_param("gpus_per_node");
  c.nodes = r.int_param("nodes");
  if (c.world_size() > (1 << 22)) throw ScenarioError(path + ".nodes", "world size is absurdly large");
  c.ideal_network = r.bool_param("ideal_network");
  c.nvlink_domain_gpus = r.int_param("nvlink_domain_gpus");
  // A cluster smaller than one NVLink domain (a part of an NVL72 rack) is one domain.
  if (c.nvlink_domain_gpus > c.world_size() && c.nvlink_domain_gpus % c.gpus_per_node == 0) c.nvlink_domain_gpus = c.world_size();
  if (c.nvlink_domain_gpus > 0 && c.gpus_per_node % c.nvlink_domain_gpus != 0 &&
      (c.nvlink_domain_gpus % c.gpus_per_node != 0 || c.world_size() % c.nvlink_domain_gpus != 0))
    throw ScenarioError(path + ".nvlink_domain_gpus",
                        "must divide gpus_per_node (" + std::to_string(c.gpus_per_node) +
                            ") or be a multiple of it that divides the " + std::to_string(c.world_size()) +
                            " GPUs, got " + std::to_string(c.nvlink_domain_gpus));

  // NVLink: per GPU per direction, the GPU's nvlink figure, and the declared latency per step.
  // (Defaults in SI by division, so that they equal the decimal literals exactly.)
  IntraNodeSpec intra;
  intra.bw_Bps = c.gpu.nvlink_Bps;
  intra.latency_s = parameter("cluster.intra_node.latency_us").value.value() / 1e6;
  intra.nvswitch = parameter("cluster.intra_node.nvswitch").value.value() != 0.0;
  intra.pcie_Bps = parameter("cluster.intra_node.pcie_GBps").value.value() * 1e9;
  if (const Json* in = r.raw("intra_node")) {
    Reader ri(*in, path + ".intra_node", "cluster.intra_node");
    intra.bw_Bps = ri.num_param("bw_GBps", intra.bw_Bps / 1e9) * 1e9;
    intra.latency_s = ri.num_param("latency_us", intra.latency_s * 1e6) * 1e-6;
    intra.nvswitch = ri.bool_param("nvswitch");
    intra.pcie_Bps = ri.num_param("pcie_GBps") * 1e9;
    ri.finish();
  }
  c.intra_node = intra;

  // Network: one NIC per GPU, rail-optimized non-blocking fat tree (the declared defaults).
  InterNodeSpec inter;
  inter.nics_per_node = c.gpus_per_node;
  inter.nic_Bps = parameter("cluster.inter_node.nic_Gbps").value.value() * 1e9 / 8.0;
  inter.latency_s = parameter("cluster.inter_node.latency_us").value.value() / 1e6;
  if (const Json* ex = r.raw("inter_node")) {
    Reader re(*ex, path + ".inter_node", "cluster.inter_node");
    inter.nics_per_node = re.int_param("nics_per_node", inter.nics_per_node);
    inter.nic_Bps = re.num_param("nic_Gbps", inter.nic_Bps * 8.0 / 1e9) * 1e9 / 8.0;
    inter.latency_s = re.num_param("latency_us", inter.latency_s * 1e6) * 1e-6;
    inter.topology = re.choice_param("topology", kFabricTopologyNames);
    inter.oversubscription = re.num_param("oversubscription");
    if (inter.oversubscription < 1.0) throw ScenarioError(path + ".inter_node.oversubscription", "must be at least 1");
    re.finish();
  }
  c.inter_node = inter;
  r.finish();
  return c;
}

// "recompute_modules": a non-empty list of Megatron's --recompute-modules names that a dense
// model has.
RecomputeModules read_recompute_modules(const Json& j, const std::string& path) {
  if (!j.is_array() || j.empty()) throw ScenarioError(path, "must be a non-empty list of module names (core_attn, mlp, layernorm)");
  RecomputeModules m{false, false, false};
  for (const Json& e : j) {
    const std::string name = e.is_string() ? e.get<std::string>() : e.dump();
    if (name == "core_attn") m.core_attn = true;
    else if (name == "mlp") m.mlp = true;
    else if (name == "layernorm") m.layernorm = true;
    else if (name == "moe_act" || name == "moe" || name == "shared_experts" || name == "mla_up_proj")
      throw ScenarioError(path, "\"" + name + "\" is a module of mixture-of-experts or MLA layers, which stepsim does not model");
    else
      throw ScenarioError(path, "unknown module \"" + name + "\" (expected core_attn, mlp or layernorm)");
  }
  return m;
}

TrainingSpec read_training(const Json& j, const std::string& path) {
  Reader r(j, path, "training");
  TrainingSpec t;
  t.seq_len = r.int_param("seq_len");
  t.global_batch = r.int_param("global_batch");
  t.micro_batch = r.int_param("micro_batch");
  t.recompute = r.choice_param("recompute", kRecomputeNames);
  // Megatron's method and layer count apply to full recomputation, the modules to selective.
  for (const char* key : {"recompute_method", "recompute_num_layers"})
    if (r.has(key) && t.recompute != Recompute::Full)
      throw ScenarioError(r.path(key), "applies to full recomputation only (recompute is \"" + to_string(t.recompute) + "\")");
  if (r.has("recompute_modules") && t.recompute != Recompute::Selective)
    throw ScenarioError(r.path("recompute_modules"), "applies to selective recomputation only (recompute is \"" + to_string(t.recompute) + "\")");
  t.recompute_method = r.choice_param("recompute_method", kRecomputeMethodNames);
  t.recompute_num_layers = r.int_param("recompute_num_layers");
  if (const Json* mods = r.raw("recompute_modules")) t.recompute_modules = read_recompute_modules(*mods, r.path("recompute_modules"));
  t.optimizer_offload_fraction = r.num_param("optimizer_offload_fraction");
  t.grads_in_fp32 = r.choice_param<bool>("grad_dtype", {{"fp32", true}, {"bf16", false}});
  t.attention = r.choice_param("attention", kAttentionNames);
  t.precision = r.choice_param("precision", kTrainingPrecisionNames);
  t.fp8_amax_history_len = r.int_param("fp8_amax_history_len");
  t.fp8_params = r.bool_param("fp8_params");
  if (t.fp8_params && !t.fp8()) throw ScenarioError(r.path("fp8_params"), "needs an FP8 precision (precision is \"bf16\")");
  if (r.has("train_tokens")) t.train_tokens = r.num_param("train_tokens");
  r.finish();
  return t;
}

ParallelSpec read_parallel(const Json& j, const std::string& path, bool& dp_given) {
  Reader r(j, path, "parallel");
  ParallelSpec p;
  p.tp = r.int_param("tp");
  p.cp = r.int_param("cp");
  p.pp = r.int_param("pp");
  dp_given = r.has("dp");
  p.dp = r.int_param("dp", 1);  // replaced by world / (tp cp pp) in check() when not given
  p.vpp = r.int_param("vpp");
  if (r.has("first_stage_layers")) p.first_stage_layers = r.int_param("first_stage_layers");
  if (r.has("last_stage_layers")) p.last_stage_layers = r.int_param("last_stage_layers");
  p.account_for_embedding_in_pipeline_split = r.bool_param("account_for_embedding_in_pipeline_split");
  p.account_for_loss_in_pipeline_split = r.bool_param("account_for_loss_in_pipeline_split");
  p.schedule = r.choice_param("schedule", kScheduleNames);
  if (r.has("microbatch_group_size")) p.microbatch_group_size = r.int_param("microbatch_group_size");
  if (r.has("pipeline_layout")) {
    p.pipeline_layout = r.string_param("pipeline_layout");
    // As Megatron: the layout's virtual stages give vpp, and more than one chunk interleaves.
    const auto virtual_stages = static_cast<std::int64_t>(parse_pipeline_layout(p.pipeline_layout).size());
    if (!r.has("vpp") && p.pp > 0 && virtual_stages % p.pp == 0) p.vpp = virtual_stages / p.pp;
    if (!r.has("schedule") && p.vpp > 1) p.schedule = Schedule::Interleaved;
  }
  p.sequence_parallel = r.bool_param("sequence_parallel");
  p.sharding = r.choice_param("sharding", kShardingNames);
  // The deprecated alias: alone it sets the sharding; beside it, it must agree.
  if (r.has("distributed_optimizer")) {
    const bool distopt = r.boolean("distributed_optimizer", true);
    if (!r.has("sharding")) {
      p.sharding = distopt ? Sharding::Optimizer : Sharding::None;
    } else if (distopt != p.shards_optimizer()) {
      throw ScenarioError(r.path("distributed_optimizer"), std::string(distopt ? "true" : "false") + " contradicts sharding \"" +
                                                               to_string(p.sharding) + "\" (true means any sharding but \"none\")");
    }
  }
  p.distributed_optimizer_instances = r.int_param("distributed_optimizer_instances");
  if (p.distributed_optimizer_instances > 1 && !p.shards_optimizer())
    throw ScenarioError(r.path("distributed_optimizer_instances"), "distributed_optimizer_instances=" + std::to_string(p.distributed_optimizer_instances) +
                                                                      " needs a sharded optimizer (sharding not \"none\")");
  p.overlap_grad_reduce = r.bool_param("overlap_grad_reduce");
  // Megatron overlaps the parameter all-gather only with the distributed optimizer and with the
  // gradient reduce overlapped; unset, the flag follows them; set, it must agree with them.
  const bool param_gather_given = r.has("overlap_param_gather");
  p.overlap_param_gather = r.bool_param("overlap_param_gather", true);
  if (!param_gather_given) {
    p.overlap_param_gather = p.shards_optimizer() && p.overlap_grad_reduce;
  } else if (p.overlap_param_gather && !(p.shards_optimizer() && p.overlap_grad_reduce)) {
    throw ScenarioError(r.path("overlap_param_gather"), "needs a sharded optimizer (sharding not \"none\") and overlap_grad_reduce (Megatron's rule)");
  }
  p.tp_comm_overlap = r.bool_param("tp_comm_overlap");
  // Megatron overlaps the pipeline's send/receive with the next pass only in the interleaved schedule
  // (arguments.py turns overlap_p2p_comm off for the others); unset, it follows the schedule and the
  // software stack (read_scenario).
  p.overlap_p2p_comm_given = r.has("overlap_p2p_comm");
  p.overlap_p2p_comm = r.bool_param("overlap_p2p_comm", p.schedule == Schedule::Interleaved);
  if (p.overlap_p2p_comm_given && p.overlap_p2p_comm && p.schedule != Schedule::Interleaved)
    throw ScenarioError(r.path("overlap_p2p_comm"), "overlaps the interleaved schedule's pipeline sends only (schedule is \"" +
                                                        to_string(p.schedule) + "\")");
  p.cp_comm_type = r.choice_param("cp_comm_type", kCpCommTypeNames);
  if (const Json* sizes = r.raw("hierarchical_cp_sizes")) {
    const std::string at = r.path("hierarchical_cp_sizes");
    if (!sizes->is_array() || sizes->size() != 2)
      throw ScenarioError(at, "must be a list of two sizes: the all-to-all groups' and the ring's, e.g. [2, 4]");
    for (const Json& e : *sizes) {
      if (!e.is_number_integer() || e.get<std::int64_t>() < 1 || e.get<std::int64_t>() > 65536)
        throw ScenarioError(at, "each size must be an integer in 1 .. 65536, got " + e.dump());
      p.hierarchical_cp_sizes.push_back(e.get<std::int64_t>());
    }
  } else if (p.cp_comm_type == CpCommType::A2AP2P) {
    throw ScenarioError(r.path("hierarchical_cp_sizes"), "is needed with cp_comm_type \"a2a+p2p\": the sizes of the all-to-all groups and of the ring, e.g. [2, 4]");
  }
  p.rank_order = r.string_param("rank_order");
  (void)rank_order_dims(p.rank_order);
  r.finish();
  return p;
}

MemorySpec read_memory(const Json* j, const std::string& path) {
  // Defaults: what the paper's 80 % margin has to cover (docs/memory-model.md section 5), as
  // declared in params.hpp (the MemorySpec member defaults).
  MemorySpec m;
  if (j == nullptr) return m;
  Reader r(*j, path, "memory");
  m.cuda_context_bytes = r.num_param("cuda_context_gib") * kGiB;
  if (r.has("workspaces_mib")) m.workspaces_bytes = r.num_param("workspaces_mib") * 1024.0 * 1024.0;
  m.nccl_buffer_bytes_per_group = r.num_param("nccl_buffer_gib_per_group") * kGiB;
  m.fragmentation_fraction = r.num_param("fragmentation_fraction");
  m.usable_fraction = r.num_param("usable_fraction");
  m.headroom_bytes = r.num_param("headroom_gib") * kGiB;
  r.finish();
  return m;
}

CostSpec read_cost(const Json* j, const std::string& path) {
  CostSpec c;
  if (j == nullptr) return c;
  Reader r(*j, path, "cost");
  if (r.has("usd_per_gpu_hour")) c.usd_per_gpu_hour = r.num_param("usd_per_gpu_hour");
  r.finish();
  return c;
}

CommSpec read_comm(const Json* j, const std::string& path) {
  CommSpec c;
  if (j == nullptr) return c;
  Reader r(*j, path, "comm");
  c.algorithm = r.choice_param("algorithm", kCollectiveAlgorithmNames);
  c.nvlink_efficiency = r.num_param("nvlink_efficiency");
  c.network_efficiency = r.num_param("network_efficiency");
  c.nvls_efficiency = r.num_param("nvls_efficiency");
  c.collective_setup_s = r.num_param("collective_setup_us") * 1e-6;
  c.p2p_setup_s = r.num_param("p2p_setup_us") * 1e-6;
  r.finish();
  return c;
}

EngineSpec read_engine(const Json* j, const std::string& path) {
  EngineSpec e;
  if (j == nullptr) return e;
  Reader r(*j, path, "engine");
  e.auto_simgrid_max_gpus = r.int_param("auto_simgrid_max_gpus");
  r.finish();
  return e;
}

std::string str(std::int64_t v) { return std::to_string(v); }

// Byte counts stepsim adds up in std::int64_t must stay below this bound (2^60, an eighth of
// the int64 range, so that sums over stages and buffers cannot overflow either).
constexpr double kMaxBytes = 1152921504606846976.0;

std::string bytes_text(double bytes) {
  std::ostringstream os;
  os.precision(3);
  os << bytes;
  return os.str();
}

// The field of `candidates` (name, value, a large but real value) furthest above its real value.
std::string most_responsible(const std::vector<std::pair<std::string, double>>& values,
                             const std::vector<double>& typical) {
  std::size_t best = 0;
  for (std::size_t i = 1; i < values.size(); ++i)
    if (values[i].second / typical[i] > values[best].second / typical[best]) best = i;
  return values[best].first;
}

// Sizes whose byte counts would overflow: each product is computed in double and compared with
// kMaxBytes; the error names the field most above its real-world range.
//   activations of one layer and one micro-batch: s b (34 h + 8 f), plus 5 a s^2 b for unfused
//     attention (Korthikanti et al. 2022, without the division by tp);
//   activations held at the peak: that times the layers of the model (1F1B and interleaving hold
//     about one micro-batch of every layer on stage 0), times m / pp for GPipe;
//   parameters with gradients and optimizer state: 20 L (4 h^2 + 3 h f) + 4 v h (16 bytes of
//     mixed-precision Adam per parameter, fp32 gradients, with margin).
std::optional<ScenarioError> size_error(const Scenario& s) {
  const auto& m = s.model;
  const auto& t = s.training;
  const auto& p = s.parallel;
  const auto d = [](std::int64_t v) { return static_cast<double>(v); };
  const double sq = d(t.seq_len), b = d(t.micro_batch), h = d(m.hidden), f = d(m.ffn_hidden), a = d(m.heads);
  const double layers = d(m.layers), vocab = d(m.vocab);
  double layer_bytes = sq * b * (34.0 * h + 8.0 * f);
  if (t.attention == Attention::Unfused) layer_bytes += 5.0 * a * sq * sq * b;
  // The field most responsible for large activations (made only for an error: most scenarios pass).
  const auto activation_field = [&] {
    return most_responsible({{"training.micro_batch", b}, {"training.seq_len", sq}, {"model.hidden", std::max(h, f / 4.0)}},
                            {64.0, 131072.0, 65536.0});
  };
  if (!(layer_bytes < kMaxBytes))
    return ScenarioError(activation_field(),
                        "absurdly large: the activations of one layer and one micro-batch would take " + bytes_text(layer_bytes) +
                            " bytes (limit 2^60)");
  // fp32 logits of one micro-batch on the last stage: 4 s b (h + v) (the output-layer term).
  const double logits_bytes = 4.0 * sq * b * (h + vocab);
  if (!(logits_bytes < kMaxBytes))
    return ScenarioError(most_responsible({{"model.vocab", vocab}, {"training.seq_len", sq}, {"training.micro_batch", b}},
                                         {1048576.0, 131072.0, 64.0}),
                        "absurdly large: the fp32 logits of one micro-batch would take " + bytes_text(logits_bytes) +
                            " bytes (limit 2^60)");
  const double param_bytes = 20.0 * layers * (4.0 * h * h + 3.0 * h * f) + 4.0 * vocab * h;
  if (!(param_bytes < kMaxBytes))
    return ScenarioError(most_responsible({{"model.hidden", std::max(h, f / 4.0)}, {"model.layers", layers}, {"model.vocab", vocab}},
                                         {65536.0, 1000.0, 1048576.0}),
                        "absurdly large: the model's parameters, gradients and optimizer state would take " +
                            bytes_text(param_bytes) + " bytes (limit 2^60)");
  const double in_flight = p.schedule == Schedule::GPipe ? std::max(1.0, d(s.micro_batches()) / d(p.pp)) : 2.0;
  const double held_bytes = layer_bytes * layers * in_flight;
  if (!(held_bytes < kMaxBytes)) {
    std::string field = activation_field();
    if (in_flight > layers && in_flight > 1024.0) field = "training.global_batch";
    else if (layers > 1000.0) field = "model.layers";
    return ScenarioError(field, "absurdly large: the activations held at the peak would take " + bytes_text(held_bytes) +
                                   " bytes (limit 2^60)");
  }
  return std::nullopt;
}

// FP8 needs FP8 tensor cores (Hopper and later, with an FP8 peak); MXFP8 needs Blackwell.
std::optional<ScenarioError> precision_error(const Scenario& s, bool messages) {
  const auto precision = s.training.precision;
  if (precision == TrainingPrecision::Bf16) return std::nullopt;
  const GpuSpec& g = s.cluster.gpu;
  const std::string what = to_string(precision) + " needs ";
  if (precision == TrainingPrecision::Mxfp8 && g.architecture != GpuArchitecture::Blackwell)
    return rule_error("training.precision", messages, [&] { return what + "a Blackwell GPU (" + g.name + " is " + to_string(g.architecture) + ")"; });
  if (g.architecture != GpuArchitecture::Hopper && g.architecture != GpuArchitecture::Blackwell)
    return rule_error("training.precision", messages,
                      [&] { return what + "a Hopper or Blackwell GPU (" + g.name + " is " + to_string(g.architecture) + ")"; });
  if (!(g.peak_fp8_flops > 0))
    return rule_error("training.precision", messages, [&] { return what + "cluster.gpu.peak_fp8_tflops > 0 (" + g.name + " gives none)"; });
  return std::nullopt;
}

}  // namespace

// Cross-field rules. Each names the field a user would change.
std::optional<ScenarioError> detail::cross_field_error(Scenario& s, bool dp_given, bool messages) {
  const auto& m = s.model;
  auto& p = s.parallel;
  const auto& t = s.training;
  if (m.heads % p.tp != 0)
    return rule_error("parallel.tp", messages, [&] { return "tp=" + str(p.tp) + " does not divide the attention heads (" + str(m.heads) + ")"; });
  if (auto e = precision_error(s, messages)) return e;
  if (m.kv_heads % p.tp != 0)
    return rule_error("parallel.tp", messages, [&] { return "tp=" + str(p.tp) + " does not divide kv_heads (" + str(m.kv_heads) + ")"; });
  if (m.ffn_hidden % p.tp != 0)
    return rule_error("parallel.tp", messages, [&] { return "tp=" + str(p.tp) + " does not divide ffn_hidden (" + str(m.ffn_hidden) + ")"; });
  if (p.schedule == Schedule::Interleaved && p.vpp < 2)
    return rule_error("parallel.vpp", messages, [&] { return "the interleaved schedule needs vpp >= 2, got " + str(p.vpp); });
  if (p.schedule != Schedule::Interleaved && p.vpp != 1)
    return rule_error("parallel.vpp", messages,
                      [&] { return "vpp=" + str(p.vpp) + " needs schedule \"interleaved\" (schedule is \"" + to_string(p.schedule) + "\")"; });
  if (p.schedule == Schedule::Interleaved && p.pp < 2) return rule_error("parallel.schedule", messages, [&] { return "interleaving needs pp >= 2"; });
  // Layers per stage and chunk: the layout's rules name the field at fault.
  if (auto e = pipeline_layout_error(s, messages)) return e;
  if (p.cp > 1 && (p.cp > t.seq_len / 2 || t.seq_len % (2 * p.cp) != 0))
    return rule_error("training.seq_len", messages, [&] { return "seq_len=" + str(t.seq_len) + " not divisible by 2*cp = " + str(2 * p.cp); });
  // As Megatron: given, the sizes multiply to cp whatever the type (only a2a+p2p uses them).
  if (const auto& h = p.hierarchical_cp_sizes; !h.empty() || p.cp_comm_type == CpCommType::A2AP2P) {
    if (h.size() != 2)
      return rule_error("parallel.hierarchical_cp_sizes", messages,
                        [&] { return "must be a list of two sizes: the all-to-all groups' and the ring's"; });
    if (h[0] * h[1] != p.cp)
      return rule_error("parallel.hierarchical_cp_sizes", messages,
                        [&] { return "the sizes' product (" + str(h[0]) + " x " + str(h[1]) + ") must be cp=" + str(p.cp); });
  }
  // Ulysses splits each TP rank's query and key-value heads over its all-to-all group.
  if (const std::int64_t a2a = p.cp_a2a_size(); a2a > 1 && ((m.heads / p.tp) % a2a != 0 || (m.kv_heads / p.tp) % a2a != 0)) {
    const bool whole = p.cp_comm_type == CpCommType::A2A;
    return rule_error(whole ? "parallel.cp_comm_type" : "parallel.hierarchical_cp_sizes", messages, [&] {
      return std::string(whole ? "a2a needs cp=" : "the all-to-all groups need their size ") + str(a2a) + " to divide the heads per TP rank (" +
             str(m.heads / p.tp) + ") and the kv_heads per TP rank (" + str(m.kv_heads / p.tp) + ")";
    });
  }
  const std::int64_t world = s.world_size();
  // Each size must fit the world before any product of them is formed (no overflow below).
  for (const auto& [field, size] : {std::pair<const char*, std::int64_t>{"parallel.tp", p.tp}, {"parallel.cp", p.cp}, {"parallel.pp", p.pp}})
    if (size > world)
      return rule_error(field, messages,
                        [&, key = field, n = size] { return std::string(key).substr(9) + "=" + str(n) + " exceeds the world size " + str(world); });
  std::int64_t model_parallel = 0;
  if (__builtin_mul_overflow(p.tp, p.cp, &model_parallel) || __builtin_mul_overflow(model_parallel, p.pp, &model_parallel) || model_parallel > world)
    return rule_error("parallel", messages, [&] { return "world size " + str(world) + " (nodes*gpus_per_node) is smaller than tp*cp*pp"; });
  if (world % model_parallel != 0)
    return rule_error("parallel", messages,
                      [&] { return "world size " + str(world) + " (nodes*gpus_per_node) is not divisible by tp*cp*pp = " + str(model_parallel); });
  if (dp_given) {
    if (p.dp > world) return rule_error("parallel.dp", messages, [&] { return "dp=" + str(p.dp) + " exceeds the world size " + str(world); });
    if (model_parallel * p.dp != world)
      return rule_error("parallel.dp", messages,
                        [&] { return "tp*cp*pp*dp = " + str(model_parallel * p.dp) + " does not equal the world size " + str(world); });
  } else {
    p.dp = world / model_parallel;
  }
  if ((p.dp * p.cp) % p.distributed_optimizer_instances != 0)
    return rule_error("parallel.distributed_optimizer_instances", messages, [&] {
      return "distributed_optimizer_instances=" + str(p.distributed_optimizer_instances) + " does not divide DP x CP (" + str(p.dp * p.cp) + ")";
    });
  if (t.global_batch % (t.micro_batch * p.dp) != 0)
    return rule_error("training.global_batch", messages,
                      [&] { return "global_batch=" + str(t.global_batch) + " not divisible by micro_batch*dp = " + str(t.micro_batch * p.dp); });
  const std::int64_t mb = s.micro_batches();
  if (p.microbatch_group_size && p.schedule != Schedule::Interleaved)
    return rule_error("parallel.microbatch_group_size", messages,
                      [&] { return "applies to the interleaved schedule only (schedule is \"" + to_string(p.schedule) + "\")"; });
  if (p.schedule == Schedule::Interleaved) {
    if (mb < p.pp)
      return rule_error("training.global_batch", messages,
                        [&] { return "interleaving needs at least pp=" + str(p.pp) + " micro-batches per pipeline, got " + str(mb); });
    // Megatron's rules (schedules.py): the group lies in [pp, micro-batches], and the last group,
    // the rest, is empty or at least pp micro-batches.
    const std::int64_t group = p.microbatch_group();
    if (!p.microbatch_group_size && mb % p.pp != 0)
      return rule_error("training.global_batch", messages, [&] {
        return "interleaving needs the micro-batch count (" + str(mb) + ") divisible by pp=" + str(p.pp) + " (or parallel.microbatch_group_size)";
      });
    if (group < p.pp || group > mb)
      return rule_error("parallel.microbatch_group_size", messages,
                        [&] { return "microbatch_group_size=" + str(group) + " must lie in [pp=" + str(p.pp) + ", micro-batches=" + str(mb) + "]"; });
    if (mb % group != 0 && mb % group < p.pp)
      return rule_error("parallel.microbatch_group_size", messages, [&] {
        return "the last group holds " + str(mb % group) + " micro-batches (" + str(mb) + " mod " + str(group) + "), fewer than pp=" + str(p.pp);
      });
  }
  if (p.tp_comm_overlap && p.tp > 1 && !p.sequence_parallel)
    return rule_error("parallel.tp_comm_overlap", messages,
                      [&] { return "needs sequence_parallel (TransformerEngine overlaps the SP all-gathers and reduce-scatters)"; });
  if (s.memory.headroom_bytes > 0 && s.memory.headroom_bytes >= s.cluster.gpu.memory_bytes)
    return rule_error("memory.headroom_gib", messages, [&] {
      return "headroom_gib=" + bytes_text(s.memory.headroom_bytes / kGiB) + " leaves no GPU memory (the GPU has " +
             bytes_text(s.cluster.gpu.memory_bytes / kGiB) + " GiB)";
    });
  return size_error(s);
}

namespace {

void check(Scenario& s, bool dp_given) {
  if (auto e = detail::cross_field_error(s, dp_given)) throw *e;
}

// ---- Software stack. A software preset may name the preset whose values it shares ("preset");
// an object in a scenario overrides its preset, or the default preset when it names none.

constexpr int kMaxPresetChain = 8;

Json software_preset_json(const std::string& name, const std::string& path, int depth = 0) {
  if (depth > kMaxPresetChain) throw ScenarioError(path, "software presets refer to each other in a loop");
  const Json& j = preset_json("software", name, path);
  Json out = j;
  if (j.contains("preset")) {
    if (!j["preset"].is_string()) throw InternalError("scenarios: software preset " + name + " names a non-string preset");
    out = merged(software_preset_json(j["preset"].get<std::string>(), path, depth + 1), j);
  }
  out["name"] = name;
  return out;
}

Json software_json(const Json* raw, const std::string& path) {
  const std::string default_name(parameter("software").default_text);
  if (raw == nullptr) return software_preset_json(default_name, path);
  if (raw->is_string()) return software_preset_json(raw->get<std::string>(), path);
  if (!raw->is_object()) throw ScenarioError(path, std::string("must be a preset name or an object, got ") + type_name(*raw));
  if (raw->contains("preset") && !(*raw)["preset"].is_string()) throw ScenarioError(path + ".preset", "must be a string");
  const bool named = raw->contains("preset");
  Json base = software_preset_json(named ? (*raw)["preset"].get<std::string>() : default_name, path + (named ? ".preset" : ""));
  if (!raw->contains("name")) base["name"] = named ? (*raw)["preset"].get<std::string>() + " (modified)" : std::string("custom");
  return merged(base, *raw);
}

// The published figures of `impl` on `arch` (scenarios/presets/kernels/attention.json), with the
// derived series completed: a missing causal series of a pass is the non-causal one times the
// causal / non-causal ratio of the forward pass at the nearest head dimension that has both.
AttentionCurves attention_curves(GpuArchitecture arch, AttentionKernel impl, const std::string& path);

// attention_curves, made once per (architecture, implementation) in the process: the curves are
// a function of the built-in figures only (a failure is not kept, so its message names each path).
AttentionCurves cached_attention_curves(GpuArchitecture arch, AttentionKernel impl, const std::string& path) {
  static std::mutex mutex;
  static std::map<std::pair<GpuArchitecture, AttentionKernel>, AttentionCurves> made;
  std::lock_guard<std::mutex> lock(mutex);
  const auto key = std::make_pair(arch, impl);
  const auto it = made.find(key);
  if (it != made.end()) return it->second;
  return made.emplace(key, attention_curves(arch, impl, path)).first->second;
}

SoftwareSpec read_software(const Json* raw, const std::string& path, const GpuSpec& gpu) {
  const Json j = software_json(raw, path);
  Reader r(j, path, "software");
  SoftwareSpec sw;
  sw.name = r.string_param("name");
  const auto required = [&](const std::string& key) -> const Param& {
    if (!r.has(key)) throw ScenarioError(r.path(key), "is required (the preset lacks it)");
    return r.param(key);
  };
  required("attention");
  sw.attention = r.choice("attention", AttentionKernel::Auto, [] {
    std::vector<std::pair<std::string, AttentionKernel>> o;
    for (const auto& n : kAttentionKernelNames) o.emplace_back(std::string(n.name), n.value);
    return o;
  }());
  const auto flag = [&](const std::string& key) {
    required(key);
    return r.boolean(key, false);
  };
  sw.fused_rope = flag("fused_rope");
  sw.fused_swiglu = flag("fused_swiglu");
  sw.fused_cross_entropy = flag("fused_cross_entropy");
  sw.grad_accum_fusion = flag("grad_accum_fusion");
  sw.fused_norm_gemm = flag("fused_norm_gemm");
  sw.cuda_graphs = flag("cuda_graphs");
  sw.tp_comm_overlap = flag("tp_comm_overlap");
  sw.tp_backward_overlap = flag("tp_backward_overlap");
  sw.overlap_p2p_comm = flag("overlap_p2p_comm");
  const auto micros = [&](const std::string& key) {
    const Param& p = required(key);
    return r.number(key, std::nullopt, p.min, p.max, p.min_exclusive) * 1e-6;
  };
  sw.kernel_launch_s = micros("kernel_launch_us");
  sw.microbatch_host_s = micros("microbatch_host_us");
  (void)r.string_param("source");
  r.finish({"description", "preset", "sources"});
  if (gpu.architecture != GpuArchitecture::Unknown || sw.attention != AttentionKernel::Auto)
    sw.attention_curves = cached_attention_curves(gpu.architecture, sw.attention, path + ".attention");
  return sw;
}

AttentionCurves attention_curves(GpuArchitecture arch, AttentionKernel impl, const std::string& path) {
  impl = resolved_attention_kernel(arch, impl);
  const std::string impl_name = to_string(impl), arch_name = to_string(arch);
  const Json& data = preset_json("kernels", "attention", path);
  AttentionCurves c;
  c.implementation = impl_name;
  c.seq_len = data.at("seq_len").get<std::vector<double>>();
  // The architecture whose published series apply, and their scale.
  std::string from = arch_name;
  double scale = 1.0;
  std::string derivation;
  for (const Json& d : data.at("derived"))
    if (d.at("architecture") == arch_name && d.at("implementation") == impl_name) {
      from = d.at("from").get<std::string>();
      scale = d.at("scale").get<double>();
      derivation = d.at("source").get<std::string>();
    }
  std::set<std::string> figures;
  for (const Json& e : data.at("published")) {
    if (e.at("architecture") != from || e.at("implementation") != impl_name) continue;
    AttentionSeries a;
    a.backward = e.at("pass") == "bwd";
    a.causal = e.at("causal").get<bool>();
    a.head_dim = e.at("head_dim").get<std::int64_t>();
    for (double v : e.at("tflops").get<std::vector<double>>()) a.flops_per_s.push_back(v * scale * 1e12);
    if (a.flops_per_s.size() != c.seq_len.size()) throw InternalError("scenarios: attention series of the wrong length");
    c.series.push_back(std::move(a));
    figures.insert(e.at("figure").get<std::string>());
  }
  if (c.series.empty()) {
    std::set<std::string> known;
    for (const Json& e : data.at("published"))
      if (e.at("architecture") == arch_name) known.insert(e.at("implementation").get<std::string>());
    for (const Json& d : data.at("derived"))
      if (d.at("architecture") == arch_name) known.insert(d.at("implementation").get<std::string>());
    std::string names;
    for (const auto& k : known) names += (names.empty() ? "" : ", ") + k;
    throw ScenarioError(path, impl_name + " has no published figures on " + arch_name + " GPUs (known there: " +
                                  (names.empty() ? std::string("none") : names) + ")");
  }
  const auto find = [&](bool backward, bool causal, std::int64_t hd) -> const AttentionSeries* {
    for (const auto& a : c.series)
      if (a.backward == backward && a.causal == causal && a.head_dim == hd) return &a;
    return nullptr;
  };
  std::set<std::int64_t> head_dims;
  for (const auto& a : c.series) head_dims.insert(a.head_dim);
  // Forward causal / non-causal ratio at the head dimension nearest to `hd` that has both.
  const auto ratio_at = [&](std::int64_t hd) -> std::pair<const AttentionSeries*, const AttentionSeries*> {
    std::pair<const AttentionSeries*, const AttentionSeries*> best{nullptr, nullptr};
    double best_distance = 0;
    for (std::int64_t h : head_dims) {
      const auto* causal = find(false, true, h);
      const auto* full = find(false, false, h);
      if (causal == nullptr || full == nullptr) continue;
      const double distance = std::fabs(std::log2(static_cast<double>(h) / static_cast<double>(hd)));
      if (best.first == nullptr || distance < best_distance) best = {causal, full}, best_distance = distance;
    }
    return best;
  };
  std::vector<AttentionSeries> completed;
  for (std::int64_t hd : head_dims)
    for (bool backward : {false, true}) {
      const auto* full = find(backward, false, hd);
      if (full == nullptr || find(backward, true, hd) != nullptr) continue;
      const auto [causal_fwd, full_fwd] = ratio_at(hd);
      if (causal_fwd == nullptr) throw InternalError("scenarios: no causal forward series of " + impl_name);
      AttentionSeries a = *full;
      a.causal = true;
      for (std::size_t i = 0; i < a.flops_per_s.size(); ++i)
        a.flops_per_s[i] *= causal_fwd->flops_per_s[i] / full_fwd->flops_per_s[i];
      completed.push_back(std::move(a));
    }
  for (auto& a : completed) c.series.push_back(std::move(a));
  for (const auto& f : figures) c.source += (c.source.empty() ? "" : "; ") + f;
  if (!derivation.empty()) c.source += "; derived for " + arch_name + ": " + derivation;
  return c;
}

void set_path(Json& root, const Override& ov) {
  Json value;
  try {
    value = Json::parse(ov.value);
  } catch (const Json::parse_error&) {
    value = ov.value;
  } catch (const Json::exception&) {
    // Valid JSON syntax that nlohmann cannot hold: a number beyond double (1e400).
    throw ScenarioError(ov.path, "the value " + ov.value + " is out of range (--set)");
  }
  Json* cur = &root;
  std::string done;
  std::size_t start = 0;
  while (true) {
    const auto dot = ov.path.find('.', start);
    const std::string key = ov.path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (key.empty()) throw ScenarioError("--set " + ov.path, "empty key in the path");
    done = join(done, key);
    if (dot == std::string::npos) {
      if (value.is_null()) {
        cur->erase(key);  // "--set key=null" restores the default
      } else if ((done == "model" || done == "cluster.gpu" || done == "software") && cur->contains(key) && (*cur)[key].is_string()) {
        // An object onto a preset name overrides some of the preset's fields.
        (*cur)[key] = merged_value(key, (*cur)[key], value);
      } else {
        (*cur)[key] = value;
      }
      return;
    }
    Json& next = (*cur)[key];
    if (next.is_null()) next = Json::object();
    if (next.is_string() && (done == "model" || done == "cluster.gpu" || done == "software")) next = Json{{"preset", next.get<std::string>()}};
    if (!next.is_object()) throw ScenarioError(done, "is not an object, cannot set " + ov.path);
    cur = &next;
    start = dot + 1;
  }
}

}  // namespace

const char* detail::json_type_name(const nlohmann::json& j) {
  if (j.is_object()) return "an object";
  if (j.is_array()) return "an array";
  if (j.is_string()) return "a string";
  if (j.is_boolean()) return "a boolean";
  if (j.is_number()) return "a number";
  if (j.is_null()) return "null";
  return "a value";
}

nlohmann::json detail::parse_json_text(const std::string& text, const std::string& origin) {
  using Event = nlohmann::json::parse_event_t;
  // Paths of the containers being parsed ("", "cluster", "axes.parallel.tp") with the keys seen in
  // each object, so that a duplicate key or an unreadable number can name its field. Deeper
  // documents are refused while parsing, before anything recursive (copies, dump) sees them.
  struct Level {
    std::string path;
    std::set<std::string> keys;
  };
  std::vector<Level> open;
  std::string last_path;  // the path of the value being parsed
  const auto track = [&](int depth, Event event, nlohmann::json& parsed) {
    switch (event) {
      case Event::object_start:
      case Event::array_start:
        if (depth >= kMaxJsonDepth) throw ScenarioError(origin, "JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
        open.push_back({open.empty() ? std::string{} : last_path, {}});
        break;
      case Event::object_end:
      case Event::array_end:
        if (!open.empty()) open.pop_back();
        last_path = open.empty() ? std::string{} : open.back().path;
        break;
      case Event::key: {
        const std::string key = parsed.get<std::string>();
        last_path = open.back().path.empty() ? key : open.back().path + "." + key;
        if (!open.back().keys.insert(key).second) throw ScenarioError(last_path, "duplicate JSON key (" + origin + ")");
        break;
      }
      case Event::value:
        break;
    }
    return true;
  };
  try {
    return nlohmann::json::parse(text, track, true, /*ignore_comments=*/true);
  } catch (const nlohmann::json::out_of_range& e) {
    // A number nlohmann cannot hold (1e400): name its field when it has one.
    if (last_path.empty()) throw ScenarioError(origin, json_error_text(e));
    throw ScenarioError(last_path, json_error_text(e) + " (" + origin + ")");
  } catch (const nlohmann::json::exception& e) {
    // parse_error (syntax).
    throw ScenarioError(origin, json_error_text(e));
  }
}

std::string detail::json_error_text(const nlohmann::json::exception& e) {
  std::string what = e.what();
  // nlohmann's message starts with "[json.exception.parse_error.101] "; keep the rest.
  const auto pos = what.find("] ");
  if (pos != std::string::npos) what = what.substr(pos + 2);
  return (dynamic_cast<const nlohmann::json::parse_error*>(&e) != nullptr ? "malformed JSON: " : "unreadable JSON: ") + what;
}

namespace {

void check_input_file(const std::string& file, const std::string& what) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto st = fs::status(file, ec);
  if (st.type() == fs::file_type::not_found) throw ScenarioError(file, "cannot open the " + what + " (no such file)");
  if (fs::is_directory(st)) throw ScenarioError(file, "is a directory, not a " + what);
  if (!ec && !fs::is_regular_file(st)) throw ScenarioError(file, "is not a regular file (expected a " + what + ")");
}

}  // namespace

void for_each_input_line(const std::string& file, const std::string& what,
                         const std::function<bool(const std::string& line, std::int64_t number, bool terminated)>& visit) {
  check_input_file(file, what);
  std::ifstream in(file, std::ios::binary);
  if (!in) throw ScenarioError(file, "cannot open the " + what);
  std::string line;
  std::int64_t number = 0;
  while (std::getline(in, line))
    if (!visit(line, ++number, !in.eof())) return;
  if (in.bad()) throw ScenarioError(file, "cannot read the " + what);
}

std::string read_input_file(const std::string& file, const std::string& what) {
  const auto limit_text = std::to_string(kMaxInputFileBytes / (1024 * 1024)) + " MiB";
  std::ifstream opened;
  if (file != "-") {
    check_input_file(file, what);
    opened.open(file, std::ios::binary);
    if (!opened) throw ScenarioError(file, "cannot open the " + what);
  }
  std::istream& in = file == "-" ? std::cin : opened;
  std::string text;
  std::vector<char> buf(1 << 16);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    text.append(buf.data(), static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxInputFileBytes) throw ScenarioError(file, "is larger than " + limit_text + " (not a " + what + ")");
  }
  if (in.bad()) throw ScenarioError(file, "cannot read the " + what);
  return text;
}

namespace {

// Whether `text` is valid UTF-8 (every string of a scenario ends up in JSON outputs).
bool valid_utf8(const std::string& text) {
  try {
    (void)Json(text).dump();
    return true;
  } catch (const Json::type_error&) {
    return false;
  }
}

}  // namespace

Override parse_override(const std::string& text) {
  if (!valid_utf8(text)) throw ScenarioError("--set", "is not valid UTF-8");
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0) throw ScenarioError("--set", "expected key=value, got \"" + text + "\"");
  return Override{text.substr(0, eq), text.substr(eq + 1)};
}

namespace {

// What a scenario part reads to, kept per (path, JSON text of the part[, GPU architecture]) for the
// process: the candidates of a sweep repeat the same model, cluster and software, and reading them
// (presets merged, efficiency files, attention curves) costs more than the rest of a scenario. A
// part that names a file outside the built-in presets is read anew each time; a failure is not
// kept, so each read reports it.
template <typename Spec>
class PartCache {
 public:
  template <typename Read>
  Spec get(const std::string& key, Read&& read) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      const auto it = made_.find(key);
      if (it != made_.end()) return it->second;
    }
    Spec spec = read();
    std::lock_guard<std::mutex> lock(mutex_);
    if (made_.size() >= kMaxEntries) made_.clear();
    made_.emplace(key, spec);
    return spec;
  }

 private:
  static constexpr std::size_t kMaxEntries = 256;
  std::mutex mutex_;
  std::map<std::string, Spec> made_;
};

// Whether a cluster object names an efficiency file (a path, read when the cluster is read).
bool names_efficiency_file(const Json& cluster) {
  const auto gpu = cluster.find("gpu");
  if (gpu == cluster.end() || !gpu->is_object()) return false;
  const auto eff = gpu->find("efficiency");
  return eff != gpu->end() && eff->is_string();
}

ClusterSpec read_cluster_cached(const Json& raw, const std::string& path) {
  if (!raw.is_object() || names_efficiency_file(raw)) return read_cluster(raw, path);
  static PartCache<ClusterSpec> cache;
  return cache.get(path + '\n' + raw.dump(), [&] { return read_cluster(raw, path); });
}

ModelSpec read_model_cached(const Json& raw, const std::string& path) {
  static PartCache<ModelSpec> cache;
  return cache.get(path + '\n' + raw.dump(), [&] { return read_model(raw, path); });
}

SoftwareSpec read_software_cached(const Json* raw, const std::string& path, const GpuSpec& gpu) {
  static PartCache<SoftwareSpec> cache;
  const std::string key = path + '\n' + std::to_string(static_cast<int>(gpu.architecture)) + '\n' + (raw != nullptr ? raw->dump() : "");
  return cache.get(key, [&] { return read_software(raw, path, gpu); });
}

}  // namespace

Scenario detail::read_scenario(const std::string& json_text, const std::vector<Override>& overrides, const std::string& origin,
                               bool& dp_given) {
  Json root = detail::parse_json_text(json_text, origin);
  if (!root.is_object()) throw ScenarioError(origin, std::string("must hold a JSON object, got ") + type_name(root));
  for (const auto& ov : overrides) set_path(root, ov);

  Reader r(root, "", "");
  Scenario s;
  s.name = r.string_param("name");
  // A model given by a Hugging Face config.json (relative to the scenario file's folder): the
  // config's fields, overridden by the object's others.
  if (auto m = root.find("model"); m != root.end() && m->is_object() && m->contains("hf_config")) {
    const Json& path = (*m)["hf_config"];
    if (!path.is_string() || path.get<std::string>().empty()) throw ScenarioError("model.hf_config", "must be the path of a config.json");
    if (m->contains("preset")) throw ScenarioError("model.hf_config", "cannot be combined with model.preset");
    std::filesystem::path file(path.get<std::string>());
    std::error_code ec;
    if (file.is_relative() && std::filesystem::is_regular_file(origin, ec)) file = std::filesystem::path(origin).parent_path() / file;
    Json imported = detail::parse_json_text(model_from_hf_config(read_input_file(file.string(), "Hugging Face config"), file.string()).json,
                                            file.string());
    for (auto it = m->begin(); it != m->end(); ++it)
      if (it.key() != "hf_config") imported[it.key()] = it.value();
    *m = imported;
  }
  const Json* model = r.raw("model");
  if (model == nullptr) throw ScenarioError("model", "is required (a model preset name or an object)");
  s.model = read_model_cached(*model, "model");
  const Json* cluster = r.raw("cluster");
  if (cluster == nullptr) throw ScenarioError("cluster", "is required");
  s.cluster = read_cluster_cached(*cluster, "cluster");
  const Json* training = r.raw("training");
  if (training == nullptr) throw ScenarioError("training", "is required");
  s.training = read_training(*training, "training");
  dp_given = false;
  const Json* parallel = r.raw("parallel");
  s.parallel = read_parallel(parallel != nullptr ? *parallel : Json::object(), "parallel", dp_given);
  s.memory = read_memory(r.raw("memory"), "memory");
  s.cost = read_cost(r.raw("cost"), "cost");
  s.comm = read_comm(r.raw("comm"), "comm");
  s.engine = read_engine(r.raw("engine"), "engine");
  s.software = read_software_cached(r.raw("software"), "software", s.cluster.gpu);
  if (!s.parallel.overlap_p2p_comm_given)
    s.parallel.overlap_p2p_comm = s.parallel.schedule == Schedule::Interleaved && s.software.overlap_p2p_comm;
  r.finish({"description"});
  return s;
}

Scenario load_scenario_text(const std::string& json_text, const std::vector<Override>& overrides, const std::string& origin) {
  bool dp_given = false;
  Scenario s = detail::read_scenario(json_text, overrides, origin, dp_given);
  check(s, dp_given);
  return s;
}

Scenario load_scenario_file(const std::string& file, const std::vector<Override>& overrides) {
  if (!valid_utf8(file)) throw ScenarioError("scenario file", "the file name is not valid UTF-8");
  return load_scenario_text(read_input_file(file, "scenario file"), overrides, file == "-" ? "<stdin>" : file);
}

Scenario load_default_scenario(const std::vector<Override>& overrides) {
  Scenario s = load_scenario_text(default_scenario_text(), overrides, "<default scenario>");
  // Its name ends in its GPU count ("...-128"), which follows overrides of the cluster.
  const bool named = std::any_of(overrides.begin(), overrides.end(), [](const Override& o) { return o.path == "name"; });
  const auto dash = s.name.find_last_of('-');
  if (!named && dash != std::string::npos && s.name.find_first_not_of("0123456789", dash + 1) == std::string::npos)
    s.name = s.name.substr(0, dash + 1) + std::to_string(s.world_size());
  return s;
}

std::optional<double> parse_token_count(const std::string& text) {
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  while (used < text.size() && text[used] == ' ') ++used;
  double scale = 1;
  if (used < text.size()) {
    switch (text[used]) {
      case 'K': case 'k': scale = 1e3; break;
      case 'M': case 'm': scale = 1e6; break;
      case 'B': case 'b': case 'G': case 'g': scale = 1e9; break;
      case 'T': case 't': scale = 1e12; break;
      default: return std::nullopt;
    }
    ++used;
  }
  if (used != text.size() || !std::isfinite(value) || text.find_first_of("0123456789") != 0) return std::nullopt;
  return value * scale;
}

std::string default_scenario_text() { return std::string(detail::embedded_files().at("examples/default.json")); }

ModelSpec model_preset(const std::string& name, const std::string& path) { return read_model(Json(name), path); }

ClusterSpec cluster_preset(const std::string& name, const std::string& path) {
  Json j{{"preset", name}};
  const Json preset = preset_json("clusters", name, path);
  if (!preset.contains("nodes")) j["nodes"] = 1;
  return read_cluster(j, path);
}
GpuSpec gpu_preset(const std::string& name, const std::string& path) { return read_gpu(Json(name), path); }
std::vector<std::string> model_preset_names() { return preset_names("models"); }
std::vector<std::string> gpu_preset_names() { return preset_names("gpus"); }
std::vector<std::string> cluster_preset_names() { return preset_names("clusters"); }
std::vector<std::string> efficiency_preset_names() { return preset_names("efficiency"); }
std::vector<std::string> software_preset_names() { return preset_names("software"); }

}  // namespace stepsim::scenarios
