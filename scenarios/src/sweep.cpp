// Sweep files: parsing, and the enumeration of candidate scenarios in a fixed order.

#include "stepsim/scenarios/sweep.hpp"

#include <algorithm>
#include <functional>
#include <optional>
#include <set>
#include <string_view>

#include <nlohmann/json.hpp>

#include "stepsim/scenarios/error.hpp"
#include "stepsim/scenarios/load.hpp"
#include "stepsim/scenarios/params.hpp"
#include "json_text.hpp"
#include "load_parts.hpp"

namespace stepsim::scenarios {

namespace detail {
const std::map<std::string, std::string_view>& embedded_files();
}

namespace {

using Json = nlohmann::json;

const char* type_name(const Json& j) { return detail::json_type_name(j); }

bool is_positive_integer(const Json& j) { return j.is_number_integer() && j.get<std::int64_t>() >= 1; }

// Axes whose values are positive integers / one of a set of strings.
const std::set<std::string>& integer_axes() {
  static const std::set<std::string> s{"gpus", "cluster.nodes", "training.seq_len", "training.global_batch",
                                       "training.micro_batch", "parallel.tp", "parallel.cp", "parallel.pp",
                                       "parallel.dp", "parallel.vpp"};
  return s;
}

template <typename E, std::size_t N>
std::vector<std::string> names(const NameTable<E, N>& table) {
  std::vector<std::string> out;
  for (const auto& n : table) out.emplace_back(n.name);
  return out;
}

const std::map<std::string, std::vector<std::string>>& choice_axes() {
  static const std::map<std::string, std::vector<std::string>> m{
      {"parallel.schedule", names(kScheduleNames)},
      {"training.recompute", names(kRecomputeNames)},
      {"parallel.cp_comm_type", names(kCpCommTypeNames)},
  };
  return m;
}

bool is_layout_axis(const std::string& name) {
  return name == "parallel.tp" || name == "parallel.cp" || name == "parallel.pp" || name == "parallel.dp";
}

// Sort rank of an axis: fixed positions for the known axes, other fields after gpus.
int axis_rank(const std::string& name) {
  static const std::vector<std::string> before{"model", "cluster", "cluster.nodes", "gpus"};
  static const std::vector<std::string> after{"training.seq_len", "training.global_batch", "training.micro_batch",
                                              "training.recompute", "parallel.tp", "parallel.cp", "parallel.pp",
                                              "parallel.dp", "parallel.schedule", "parallel.vpp"};
  for (std::size_t i = 0; i < before.size(); ++i)
    if (before[i] == name) return static_cast<int>(i);
  for (std::size_t i = 0; i < after.size(); ++i)
    if (after[i] == name) return 200 + static_cast<int>(i);
  return 100;
}

// The scenario path an axis writes ("gpus" writes cluster.nodes).
std::string axis_target(const std::string& name) { return name == "gpus" ? "cluster.nodes" : name; }

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    const auto dot = path.find('.', start);
    out.push_back(path.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) return out;
    start = dot + 1;
  }
}

// Sets a dotted path in a scenario object (the rules of --set: a preset name on the way becomes
// {"preset": name}).
void set_path(Json& root, const std::string& path, const Json& value, const std::string& where) {
  const auto keys = split_path(path);
  Json* cur = &root;
  std::string done;
  for (std::size_t i = 0; i + 1 < keys.size(); ++i) {
    done += (done.empty() ? "" : ".") + keys[i];
    Json& next = (*cur)[keys[i]];
    if (next.is_null()) next = Json::object();
    if (next.is_string() && (done == "model" || done == "cluster.gpu")) next = Json{{"preset", next.get<std::string>()}};
    if (!next.is_object()) throw ScenarioError(where, "base." + done + " is not an object, cannot set " + path);
    cur = &next;
  }
  (*cur)[keys.back()] = value;
}

const Json* get_path(const Json& root, const std::string& path) {
  const Json* cur = &root;
  for (const auto& k : split_path(path)) {
    if (!cur->is_object()) return nullptr;
    auto it = cur->find(k);
    if (it == cur->end()) return nullptr;
    cur = &*it;
  }
  return cur;
}

std::string value_text(const Json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }


std::optional<std::int64_t> read_limit(const Json& c, const std::string& key) {
  auto it = c.find(key);
  if (it == c.end()) return std::nullopt;
  if (!is_positive_integer(*it)) throw ScenarioError("constraints." + key, std::string("must be a positive integer, got ") + it->dump());
  return it->get<std::int64_t>();
}

bool read_flag(const Json& c, const std::string& key, bool def) {
  auto it = c.find(key);
  if (it == c.end()) return def;
  if (!it->is_boolean()) throw ScenarioError("constraints." + key, std::string("must be true or false, got ") + type_name(*it));
  return it->get<bool>();
}

SweepConstraints read_constraints(const Json& c) {
  if (!c.is_object()) throw ScenarioError("constraints", std::string("must be an object, got ") + type_name(c));
  static const std::set<std::string> known{"tp_cp_within_node", "max_tp", "max_cp", "max_pp", "max_dp", "powers_of_two"};
  for (auto it = c.begin(); it != c.end(); ++it)
    if (known.count(it.key()) == 0) throw ScenarioError("constraints." + it.key(), "unknown key");
  SweepConstraints out;
  out.tp_cp_within_node = read_flag(c, "tp_cp_within_node", true);
  out.powers_of_two = read_flag(c, "powers_of_two", false);
  out.max_tp = read_limit(c, "max_tp");
  out.max_cp = read_limit(c, "max_cp");
  out.max_pp = read_limit(c, "max_pp");
  out.max_dp = read_limit(c, "max_dp");
  return out;
}

// A "zip" axis: a list of objects, each one point that sets several fields together
// ({"cluster.preset": "dgx-b200", "cost.usd_per_gpu_hour": 5.0}); every object names the same fields.
SweepAxis read_zip_axis(const Json& v) {
  if (!v.is_array() || v.empty()) throw ScenarioError("axes.zip", "must be a list of objects, each setting several fields together");
  SweepAxis axis;
  axis.name = "zip";
  std::set<std::string> seen, fields;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::string at = "axes.zip[" + std::to_string(i) + "]";
    if (!v[i].is_object() || v[i].empty()) throw ScenarioError(at, std::string("must be an object of field -> value, got ") + type_name(v[i]));
    std::set<std::string> these;
    for (auto it = v[i].begin(); it != v[i].end(); ++it) {
      const std::string& k = it.key();
      if (k.empty() || k.front() == '.' || k.back() == '.' || k.find("..") != std::string::npos)
        throw ScenarioError(at + "." + k, "is not a field path");
      if (k == "gpus" || is_layout_axis(k) || k == "parallel.schedule" || k == "parallel.vpp")
        throw ScenarioError(at + "." + k, "cannot be zipped (make it an axis of its own)");
      if (it->is_null()) throw ScenarioError(at + "." + k, "must not be null");
      these.insert(k);
    }
    if (i == 0) fields = these;
    if (these != fields) throw ScenarioError(at, "must name the same fields as axes.zip[0]");
    if (!seen.insert(v[i].dump()).second) throw ScenarioError(at, "repeats the point " + v[i].dump());
    axis.values_json.push_back(v[i].dump());
  }
  return axis;
}

SweepAxis read_axis(const std::string& name, const Json& v) {
  if (name == "zip") return read_zip_axis(v);
  const std::string where = "axes." + name;
  if (name.empty() || name.front() == '.' || name.back() == '.' || name.find("..") != std::string::npos)
    throw ScenarioError(where, "is not a field path");
  SweepAxis axis;
  axis.name = name;
  if (v.is_string() && v.get<std::string>() == "auto") {
    if (!is_layout_axis(name))
      throw ScenarioError(where, "\"auto\" is only allowed for parallel.tp, parallel.cp, parallel.pp and parallel.dp");
    axis.automatic = true;
    return axis;
  }
  if (!v.is_array()) throw ScenarioError(where, std::string("must be a list of values") + (is_layout_axis(name) ? " or \"auto\"" : "") + ", got " + type_name(v));
  if (v.empty()) throw ScenarioError(where, "must list at least one value");
  std::set<std::string> seen;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const Json& x = v[i];
    const std::string at = where + "[" + std::to_string(i) + "]";
    if (integer_axes().count(name) != 0 && !is_positive_integer(x))
      throw ScenarioError(at, std::string("must be a positive integer, got ") + (x.is_number() ? x.dump() : type_name(x)));
    if (auto c = choice_axes().find(name); c != choice_axes().end()) {
      if (!x.is_string()) throw ScenarioError(at, std::string("must be a string, got ") + type_name(x));
      if (std::find(c->second.begin(), c->second.end(), x.get<std::string>()) == c->second.end()) {
        std::string allowed;
        for (const auto& a : c->second) allowed += (allowed.empty() ? "" : ", ") + a;
        throw ScenarioError(at, "unknown value \"" + x.get<std::string>() + "\" (expected one of: " + allowed + ")");
      }
    }
    if ((name == "model" || name == "cluster") && !x.is_string() && !x.is_object())
      throw ScenarioError(at, std::string("must be a preset name or an object, got ") + type_name(x));
    if (x.is_null()) throw ScenarioError(at, "must not be null");
    if (!seen.insert(x.dump()).second) throw ScenarioError(at, "repeats the value " + x.dump());
    axis.values_json.push_back(x.dump());
  }
  return axis;
}

// The schedule of a name read_axis accepted.
Schedule schedule_named(const std::string& name) {
  for (const auto& entry : kScheduleNames)
    if (entry.name == name) return entry.value;
  throw InternalError("sweep: no schedule named " + name);
}

bool power_of_two(std::int64_t x) { return x >= 1 && (x & (x - 1)) == 0; }

std::vector<std::int64_t> divisors(std::int64_t n) {
  std::vector<std::int64_t> out;
  for (std::int64_t d = 1; d <= n; ++d)
    if (n % d == 0) out.push_back(d);
  return out;
}

// GPUs per node of a cluster value (its own field, else its preset's); nullopt when unknown.
std::optional<std::int64_t> gpus_per_node(const Json& cluster) {
  if (!cluster.is_object()) return std::nullopt;
  if (auto it = cluster.find("gpus_per_node"); it != cluster.end()) {
    if (is_positive_integer(*it)) return it->get<std::int64_t>();
    return std::nullopt;
  }
  auto p = cluster.find("preset");
  if (p == cluster.end() || !p->is_string()) return std::nullopt;
  const auto& files = detail::embedded_files();
  auto f = files.find("presets/clusters/" + p->get<std::string>() + ".json");
  if (f == files.end()) return std::nullopt;
  const Json preset = Json::parse(f->second);
  if (auto g = preset.find("gpus_per_node"); g != preset.end() && is_positive_integer(*g)) return g->get<std::int64_t>();
  return std::nullopt;
}

class Enumerator {
 public:
  Enumerator(const SweepSpec& spec, const CandidateVisitor& visit, bool prechecks, CandidateLoad load)
      : spec_(spec), visit_(visit), prechecks_(prechecks), load_(load) {
    for (std::size_t i = 0; i < spec_.axes.size(); ++i) {
      const auto& n = spec_.axes[i].name;
      if (!is_layout_axis(n) && n != "parallel.schedule" && n != "parallel.vpp") outer_.push_back(i);
    }
    for (std::size_t i = 0; i < spec_.axes.size(); ++i) {
      const auto& n = spec_.axes[i].name;
      if (n == "parallel.schedule" || n == "parallel.vpp") inner_tail_.push_back(i);
    }
    for (const std::size_t ai : inner_tail_) {
      std::vector<Json> values;
      for (const auto& v : spec_.axes[ai].values_json) values.push_back(Json::parse(v));
      tail_values_.push_back(std::move(values));
    }
    tail_choice_.assign(inner_tail_.size(), 0);
  }

  EnumerationCounts run() {
    Json base = detail::parse_json_text(spec_.base_json, "base");
    base_ = base;
    chosen_.assign(spec_.axes.size(), std::string());
    choice_index_.assign(spec_.axes.size(), 0);
    outer(0, base);
    if (out_.valid == 0 && !stopped_) {
      std::string why = first_invalid_.empty() ? std::string("every candidate is excluded by the constraints") : "first reason: " + first_invalid_;
      throw ScenarioError(spec_.origin, "the sweep has no valid candidate (" + std::to_string(out_.generated) + " generated; " + why + ")");
    }
    out_.complete = !stopped_;
    return std::move(out_);
  }

 private:
  void outer(std::size_t k, const Json& cur) {
    if (k == outer_.size()) {
      layout(cur);
      return;
    }
    const std::size_t ai = outer_[k];
    const SweepAxis& axis = spec_.axes[ai];
    for (std::size_t vi = 0; vi < axis.values_json.size(); ++vi) {
      Json next = cur;
      const Json value = Json::parse(axis.values_json[vi]);
      const std::string where = "axes." + axis.name + "[" + std::to_string(vi) + "]";
      if (axis.name == "cluster") {
        Json c = value.is_string() ? Json{{"preset", value}} : value;
        const Json* old = get_path(cur, "cluster");
        if (old != nullptr && old->is_object() && old->contains("nodes") && !c.contains("nodes")) c["nodes"] = (*old)["nodes"];
        next["cluster"] = c;
      } else if (axis.name == "gpus") {
        next_gpus_ = value.get<std::int64_t>();
      } else if (axis.name == "zip") {
        for (auto it = value.begin(); it != value.end(); ++it) set_path(next, it.key(), it.value(), where + "." + it.key());
      } else {
        set_path(next, axis.name, value, where);
      }
      chosen_[ai] = value_text(value);
      choice_index_[ai] = vi;
      outer(k + 1, next);
      if (stopped_) return;
    }
  }

  // Maps a loader error of the neutral scenario to the sweep file's path.
  [[noreturn]] void rethrow(const ScenarioError& e) {
    const std::string& p = e.path();
    const std::string reason = std::string(e.what()).substr(p.size() + 2);
    std::size_t best = spec_.axes.size();
    std::size_t best_len = 0;
    for (std::size_t i = 0; i < spec_.axes.size(); ++i) {
      const std::string t = axis_target(spec_.axes[i].name);
      if ((p == t || p.rfind(t + ".", 0) == 0) && t.size() > best_len) {
        best = i;
        best_len = t.size();
      }
    }
    if (best < spec_.axes.size()) {
      const auto& a = spec_.axes[best];
      throw ScenarioError("axes." + a.name + "[" + std::to_string(choice_index_[best]) + "]" + p.substr(best_len), reason);
    }
    // A field a zipped point sets.
    for (std::size_t i = 0; i < spec_.axes.size(); ++i) {
      if (spec_.axes[i].name != "zip") continue;
      const Json point = Json::parse(spec_.axes[i].values_json[choice_index_[i]]);
      for (auto it = point.begin(); it != point.end(); ++it)
        if (p == it.key() || p.rfind(it.key() + ".", 0) == 0)
          throw ScenarioError("axes.zip[" + std::to_string(choice_index_[i]) + "]." + p, reason);
    }
    // An error on a path an axis created on its way ("foo" of axes.foo.bar, not in the base):
    // the axis names a field the schema does not have.
    for (const auto& a : spec_.axes) {
      const std::string t = axis_target(a.name);
      if (t.rfind(p + ".", 0) == 0 && get_path(base_, p) == nullptr)
        throw ScenarioError("axes." + a.name, reason + " (\"" + p + "\" is not a scenario field)");
    }
    if (p == "<root>" || p == "base" || p == spec_.origin) throw ScenarioError("base", reason);
    throw ScenarioError("base." + p, reason);
  }

  std::int64_t next_gpus_ = 0;

  void layout(const Json& outer_json) {
    Json cur = outer_json;
    const bool has_gpus = std::any_of(spec_.axes.begin(), spec_.axes.end(), [](const SweepAxis& a) { return a.name == "gpus"; });
    const Json* cluster = get_path(cur, "cluster");
    std::int64_t gpn = 0;
    if (cluster != nullptr) gpn = gpus_per_node(*cluster).value_or(0);
    std::int64_t world = 0;
    if (gpn > 0) {
      if (has_gpus) {
        if (next_gpus_ % gpn != 0) {
          ++out_.generated;
          count_invalid("gpus", "gpus=" + std::to_string(next_gpus_) + " is not a multiple of gpus_per_node (" + std::to_string(gpn) + ")");
          return;
        }
        cur["cluster"]["nodes"] = next_gpus_ / gpn;
      }
      if (const Json* n = get_path(cur, "cluster.nodes"); n != nullptr && is_positive_integer(*n)) world = gpn * n->get<std::int64_t>();
    }
    check_schema(cur, world);
    read_template(cur);
    // Every layout: tp, cp, pp, dp (lists, "auto", or the base's value), then schedule and vpp.
    std::vector<std::int64_t> lay(4, 0);
    layout_cur_ = &cur;
    layout_axis(0, world, gpn, lay);
  }

  // The scenario of this outer combination with the layout axes' fields set to values every reader
  // accepts: its cross-field rules then judge each layout without a JSON document (check_layout).
  // When it cannot be read, every layout goes through the loader.
  void read_template(const Json& cur) {
    Json t = cur;
    for (std::size_t k = 0; k < 4; ++k) {
      std::size_t ai = 0;
      if (const SweepAxis* a = find_axis(kLayoutNames[k], ai); a != nullptr && !(k == 3 && a->automatic))
        set_path(t, kLayoutNames[k], 1, "axes." + std::string(kLayoutNames[k]));
    }
    for (const std::size_t ai : inner_tail_) {
      const auto& name = spec_.axes[ai].name;
      set_path(t, name, name == "parallel.vpp" ? Json(1) : Json("1f1b"), "axes." + name);
    }
    // The hierarchical CP sizes must multiply to the layout's cp: read with cp 1 as [1, 1], then
    // restored, so that each layout is judged with the sizes given.
    std::optional<Json> cp_sizes;
    if (Json* p = t.contains("parallel") && t["parallel"].is_object() ? &t["parallel"] : nullptr; p != nullptr && p->contains("hierarchical_cp_sizes")) {
      cp_sizes = (*p)["hierarchical_cp_sizes"];
      neutral_cp_sizes((*p)["hierarchical_cp_sizes"]);
    }
    template_ok_ = false;
    try {
      template_ = detail::read_scenario(t.dump(), {}, spec_.origin, template_dp_given_);
      if (cp_sizes) template_.parallel.hierarchical_cp_sizes = cp_sizes->get<std::vector<std::int64_t>>();
      template_parallel_ = template_.parallel;
      template_ok_ = true;
    } catch (const ScenarioError&) {
    }
  }

  // The loader's verdict on the current layout from the template: nullopt when the loader must
  // decide (no template, or a value outside the range the reader accepts), else the error it would
  // throw (an empty optional inside: valid).
  std::optional<std::optional<ScenarioError>> check_layout(const std::vector<std::int64_t>& lay) {
    if (!prechecks_ || !template_ok_) return std::nullopt;
    ParallelSpec& p = template_.parallel;
    p = template_parallel_;
    std::int64_t* const fields[] = {&p.tp, &p.cp, &p.pp, &p.dp};
    for (std::size_t k = 0; k < 4; ++k) {
      if (!written_[k]) continue;
      const Param& range = *layout_params_[k];
      if (static_cast<double>(lay[k]) < range.min || static_cast<double>(lay[k]) > range.max) return std::nullopt;
      *fields[k] = lay[k];
    }
    for (std::size_t k = 0; k < inner_tail_.size(); ++k) {
      const Json& v = tail_values_[k][tail_choice_[k]];
      if (spec_.axes[inner_tail_[k]].name == "parallel.vpp") {
        const Param& range = *vpp_param_;
        const auto vpp = v.get<std::int64_t>();
        if (static_cast<double>(vpp) < range.min || static_cast<double>(vpp) > range.max) return std::nullopt;
        p.vpp = vpp;
      } else {
        p.schedule = schedule_named(v.get<std::string>());
      }
    }
    // The reason is shown for the first invalid combination only.
    return detail::cross_field_error(template_, template_dp_given_, first_invalid_.empty());
  }

  // Hierarchical CP sizes that any cp of 1 accepts ([1, 1]), when they are well-formed (else the
  // loader names the error).
  static void neutral_cp_sizes(Json& sizes) {
    if (sizes.is_array() && sizes.size() == 2 && sizes[0].is_number_integer() && sizes[1].is_number_integer() && sizes[0].get<std::int64_t>() >= 1 &&
        sizes[1].get<std::int64_t>() >= 1 && sizes[0].get<std::int64_t>() <= 65536 && sizes[1].get<std::int64_t>() <= 65536)
      sizes = Json::array({1, 1});
  }

  // Loads the scenario with a layout every model and cluster accept: errors left are malformed values.
  void check_schema(const Json& cur, std::int64_t world) {
    Json n = cur;
    if (auto p = n.find("parallel"); p != n.end() && p->is_object()) {
      for (const char* k : {"tp", "cp", "pp", "vpp"})
        if (p->contains(k) && (*p)[k].is_number_integer()) (*p)[k] = 1;
      if (p->contains("dp") && (*p)["dp"].is_number_integer()) p->erase("dp");
      if (p->contains("hierarchical_cp_sizes")) neutral_cp_sizes((*p)["hierarchical_cp_sizes"]);
      if (p->contains("schedule") && (*p)["schedule"].is_string()) {
        const auto s = (*p)["schedule"].get<std::string>();
        if (s == "1f1b" || s == "gpipe" || s == "interleaved") (*p)["schedule"] = "1f1b";
      }
    }
    if (auto t = n.find("training"); t != n.end() && t->is_object() && world > 0) {
      const Json* gb = t->contains("global_batch") ? &(*t)["global_batch"] : nullptr;
      const Json* mb = t->contains("micro_batch") ? &(*t)["micro_batch"] : nullptr;
      if (gb != nullptr && is_positive_integer(*gb) && (mb == nullptr || is_positive_integer(*mb)))
        (*t)["global_batch"] = (mb == nullptr ? 1 : mb->get<std::int64_t>()) * world;
    }
    try {
      (void)load_scenario_text(n.dump(), {}, "base");
    } catch (const ScenarioError& e) {
      rethrow(e);
    }
  }

  static std::int64_t base_int(const Json& cur, const std::string& path, std::int64_t def) {
    const Json* v = get_path(cur, path);
    return v != nullptr && v->is_number_integer() ? v->get<std::int64_t>() : def;
  }

  const SweepAxis* find_axis(const std::string& name, std::size_t& index) const {
    for (std::size_t i = 0; i < spec_.axes.size(); ++i)
      if (spec_.axes[i].name == name) {
        index = i;
        return &spec_.axes[i];
      }
    return nullptr;
  }

  void layout_axis(std::size_t k, std::int64_t world, std::int64_t gpn, std::vector<std::int64_t>& lay) {
    if (k == 4) {
      tail(0, world, gpn, lay);
      return;
    }
    std::size_t ai = 0;
    const SweepAxis* axis = find_axis(kLayoutNames[k], ai);
    // The product of the sizes chosen so far; one that overflows cannot divide the world size.
    std::int64_t used = 1;
    bool overflow = false;
    for (std::size_t i = 0; i < k && !overflow; ++i) overflow = __builtin_mul_overflow(used, lay[i], &used);
    const std::int64_t rest = !overflow && world > 0 && world % used == 0 ? world / used : 0;
    std::vector<std::int64_t> values;
    bool write = axis != nullptr;
    if (axis == nullptr) {
      const std::int64_t def = k == 3 ? (rest > 0 ? rest : 1) : 1;
      values.push_back(base_int(*layout_cur_, kLayoutNames[k], def));
    } else if (axis->automatic) {
      if (k == 3) {
        values.push_back(rest > 0 ? rest : 1);
        write = false;
      } else {
        values = rest > 0 ? divisors(rest) : std::vector<std::int64_t>{1};
      }
    } else {
      for (const auto& v : axis->values_json) values.push_back(Json::parse(v).get<std::int64_t>());
    }
    written_[k] = write;
    for (std::size_t vi = 0; vi < values.size(); ++vi) {
      lay[k] = values[vi];
      if (axis != nullptr) {
        chosen_[ai] = std::to_string(values[vi]);
        choice_index_[ai] = vi;
      }
      layout_axis(k + 1, world, gpn, lay);
      if (stopped_) return;
    }
  }

  void tail(std::size_t k, std::int64_t world, std::int64_t gpn, const std::vector<std::int64_t>& lay) {
    if (k == inner_tail_.size()) {
      finish(world, gpn, lay);
      return;
    }
    const std::size_t ai = inner_tail_[k];
    for (std::size_t vi = 0; vi < tail_values_[k].size(); ++vi) {
      chosen_[ai] = value_text(tail_values_[k][vi]);
      choice_index_[ai] = vi;
      tail_choice_[k] = vi;
      tail(k + 1, world, gpn, lay);
      if (stopped_) return;
    }
  }

  // The candidate's scenario object: the outer combination with the layout and tail values set.
  Json candidate_json(const std::vector<std::int64_t>& lay) const {
    Json next = *layout_cur_;
    for (std::size_t k = 0; k < 4; ++k)
      if (written_[k]) set_path(next, kLayoutNames[k], lay[k], "axes." + std::string(kLayoutNames[k]));
    for (std::size_t k = 0; k < inner_tail_.size(); ++k) {
      const auto& name = spec_.axes[inner_tail_[k]].name;
      set_path(next, name, tail_values_[k][tail_choice_[k]], "axes." + name);
    }
    return next;
  }

  bool allowed(std::int64_t gpn, const std::vector<std::int64_t>& lay) const {
    const auto& c = spec_.constraints;
    const std::int64_t tp = lay[0], cp = lay[1], pp = lay[2], dp = lay[3];
    if (c.tp_cp_within_node && gpn > 0 && (tp > gpn || cp > gpn || tp * cp > gpn)) return false;
    if (c.max_tp && tp > *c.max_tp) return false;
    if (c.max_cp && cp > *c.max_cp) return false;
    if (c.max_pp && pp > *c.max_pp) return false;
    if (c.max_dp && dp > *c.max_dp) return false;
    if (c.powers_of_two && !(power_of_two(tp) && power_of_two(cp) && power_of_two(pp) && power_of_two(dp))) return false;
    return true;
  }

  void count_invalid(const std::string& field, const std::string& message) {
    ++out_.invalid;
    ++out_.invalid_by_field[field];
    if (first_invalid_.empty()) first_invalid_ = message;
  }

  void finish(std::int64_t, std::int64_t gpn, const std::vector<std::int64_t>& lay) {
    ++out_.generated;
    if (!allowed(gpn, lay)) {
      ++out_.excluded_by_constraints;
      return;
    }
    // Most combinations break a cross-field rule: judged on the template, without the loader.
    const auto verdict = check_layout(lay);
    if (verdict && *verdict) {
      count_invalid((*verdict)->path(), (*verdict)->what());
      return;
    }
    Candidate c;
    c.scenario_json = candidate_json(lay).dump();
    // Judged valid on the template: the loader would accept it too (the template is the loader's
    // reading of the same fields, and check_layout applies its cross-field rules).
    if (!verdict || load_ == CandidateLoad::Scenario) {
      try {
        c.scenario = load_scenario_text(c.scenario_json, {}, spec_.origin);
        c.loaded = true;
      } catch (const ScenarioError& e) {
        count_invalid(e.path(), e.what());
        return;
      }
    }
    std::string key;
    for (std::size_t i = 0; i < spec_.axes.size(); ++i) {
      key += (key.empty() ? "" : " ") + spec_.axes[i].name + "=" + chosen_[i];
    }
    if (key.empty()) key = "base";
    c.key = std::move(key);
    c.index = out_.valid++;
    if (!visit_(std::move(c))) stopped_ = true;
  }

  static constexpr const char* kLayoutNames[] = {"parallel.tp", "parallel.cp", "parallel.pp", "parallel.dp"};
  // Their ranges (and vpp's), looked up once.
  const Param* const layout_params_[4] = {&parameter(kLayoutNames[0]), &parameter(kLayoutNames[1]), &parameter(kLayoutNames[2]),
                                          &parameter(kLayoutNames[3])};
  const Param* const vpp_param_ = &parameter("parallel.vpp");

  const SweepSpec& spec_;
  const CandidateVisitor& visit_;
  const bool prechecks_;
  const CandidateLoad load_;
  bool stopped_ = false;
  const Json* layout_cur_ = nullptr;        // the outer combination whose layouts are enumerated
  bool written_[4] = {false, false, false, false};  // layout sizes an axis writes into the scenario
  std::vector<std::vector<Json>> tail_values_;      // values of the schedule and vpp axes
  std::vector<std::size_t> tail_choice_;
  Scenario template_;                       // read_template
  ParallelSpec template_parallel_;
  bool template_dp_given_ = false;
  bool template_ok_ = false;
  Json base_;  // the sweep file's base scenario, as written
  std::vector<std::size_t> outer_;
  std::vector<std::size_t> inner_tail_;
  std::vector<std::string> chosen_;
  std::vector<std::size_t> choice_index_;
  EnumerationCounts out_;
  std::string first_invalid_;
};

}  // namespace

SweepSpec parse_sweep_text(const std::string& json_text, const std::string& origin) {
  const Json root = detail::parse_json_text(json_text, origin);
  if (!root.is_object()) throw ScenarioError(origin, std::string("must hold a JSON object, got ") + type_name(root));
  static const std::set<std::string> known{"name", "description", "base", "axes", "constraints"};
  for (auto it = root.begin(); it != root.end(); ++it)
    if (known.count(it.key()) == 0) throw ScenarioError(it.key(), "unknown key (expected name, description, base, axes, constraints)");
  SweepSpec spec;
  spec.origin = origin;
  spec.name = "sweep";
  if (auto n = root.find("name"); n != root.end()) {
    if (!n->is_string()) throw ScenarioError("name", std::string("must be a string, got ") + type_name(*n));
    spec.name = n->get<std::string>();
  }
  auto base = root.find("base");
  if (base == root.end()) throw ScenarioError("base", "is required (a scenario object)");
  if (!base->is_object()) throw ScenarioError("base", std::string("must be a scenario object, got ") + type_name(*base));
  spec.base_json = base->dump();
  auto axes = root.find("axes");
  if (axes == root.end()) throw ScenarioError("axes", "is required (an object of field -> list of values)");
  if (!axes->is_object()) throw ScenarioError("axes", std::string("must be an object, got ") + type_name(*axes));
  for (auto it = axes->begin(); it != axes->end(); ++it) spec.axes.push_back(read_axis(it.key(), it.value()));
  const bool gpus = axes->contains("gpus");
  if (gpus && axes->contains("cluster.nodes")) throw ScenarioError("axes.gpus", "cannot be combined with axes.cluster.nodes");
  if (auto zip = axes->find("zip"); zip != axes->end() && zip->is_array() && !zip->empty() && zip->front().is_object())
    for (auto it = zip->front().begin(); it != zip->front().end(); ++it)
      if (axes->contains(it.key())) throw ScenarioError("axes.zip[0]." + it.key(), "is also an axis of its own");
  for (const auto& a : spec.axes) {
    if (a.name != "cluster" && a.name.rfind("cluster.", 0) == 0 && axes->contains("cluster") && a.name != "cluster.nodes")
      throw ScenarioError("axes." + a.name, "cannot be combined with axes.cluster (put the field in the cluster values)");
    if (a.name == "model" || a.name == "cluster") continue;
    if (a.name.rfind("model.", 0) == 0 && axes->contains("model"))
      throw ScenarioError("axes." + a.name, "cannot be combined with axes.model (put the field in the model values)");
  }
  std::stable_sort(spec.axes.begin(), spec.axes.end(), [](const SweepAxis& a, const SweepAxis& b) {
    const int ra = axis_rank(a.name), rb = axis_rank(b.name);
    if (ra != rb) return ra < rb;
    return a.name < b.name;
  });
  if (auto c = root.find("constraints"); c != root.end()) spec.constraints = read_constraints(*c);
  return spec;
}

SweepSpec load_sweep_file(const std::string& file) {
  return parse_sweep_text(read_input_file(file, "sweep file"), file);
}

EnumerationCounts for_each_candidate(const SweepSpec& spec, const CandidateVisitor& visit, bool prechecks, CandidateLoad load) {
  return Enumerator(spec, visit, prechecks, load).run();
}

EnumerationCounts count_candidates(const SweepSpec& spec, std::int64_t stop_after) {
  return for_each_candidate(
      spec, [stop_after](Candidate&& c) { return stop_after <= 0 || c.index + 1 < stop_after; }, true, CandidateLoad::JsonOnly);
}

Enumeration enumerate(const SweepSpec& spec) {
  Enumeration e;
  static_cast<EnumerationCounts&>(e) = for_each_candidate(spec, [&e](Candidate&& c) {
    e.candidates.push_back(std::move(c));
    return true;
  });
  return e;
}

std::string enumeration_summary(const EnumerationCounts& e) {
  std::string s = "generated " + std::to_string(e.generated) + ", " + std::to_string(e.excluded_by_constraints) +
                  " excluded by constraints, " + std::to_string(e.invalid) + " invalid";
  if (!e.invalid_by_field.empty()) {
    std::string parts;
    for (const auto& [field, n] : e.invalid_by_field) parts += (parts.empty() ? "" : ", ") + field + " " + std::to_string(n);
    s += " (" + parts + ")";
  }
  s += ", " + std::to_string(e.valid) + " candidates";
  return s;
}

}  // namespace stepsim::scenarios
