#include "stepsim/scenarios/layout.hpp"

#include <algorithm>
#include <cctype>
#include <numeric>

#include "stepsim/scenarios/error.hpp"
#include "stepsim/scenarios/scenario.hpp"

namespace stepsim::scenarios {

namespace {

std::string str(std::int64_t x) { return std::to_string(x); }

constexpr const char* kLayoutField = "parallel.pipeline_layout";
// Expanded layouts longer than this are refused (one symbol per layer or stage boundary), and so
// are parentheses nested deeper than this.
constexpr std::size_t kMaxExpandedSymbols = 1 << 20;
constexpr int kMaxNesting = 32;

// Recursive-descent reader of the notation: sequence := item*; item := atom ('*' count)?;
// atom := symbol | '|' | '(' sequence ')'. Commas are skipped.
class LayoutReader {
 public:
  explicit LayoutReader(const std::string& text) : text_(text) {}

  std::string read() {
    std::string out = sequence(0);
    if (pos_ < text_.size()) fail("unmatched ')' at position " + str(static_cast<std::int64_t>(pos_ + 1)));
    return out;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw ScenarioError(kLayoutField, why + " in \"" + text_ + "\"");
  }

  void skip_commas() {
    while (pos_ < text_.size() && text_[pos_] == ',') ++pos_;
  }

  std::string sequence(int depth) {
    std::string out;
    while (true) {
      skip_commas();
      if (pos_ >= text_.size() || text_[pos_] == ')') return out;
      out += item(depth);
      if (out.size() > kMaxExpandedSymbols) fail("expands to more than " + str(kMaxExpandedSymbols) + " symbols");
    }
  }

  std::string item(int depth) {
    std::string unit;
    const char c = text_[pos_];
    const std::size_t at = pos_ + 1;
    if (c == '(') {
      if (depth >= kMaxNesting) fail("parentheses nested deeper than " + str(kMaxNesting));
      ++pos_;
      unit = sequence(depth + 1);
      if (pos_ >= text_.size()) fail("'(' at position " + str(static_cast<std::int64_t>(at)) + " is not closed");
      ++pos_;
    } else if (c == 'E' || c == 't' || c == 'L' || c == '|') {
      unit = std::string(1, c);
      ++pos_;
    } else if (c == 'm') {
      fail("multi-token prediction layers ('m') are not modelled");
    } else {
      fail("unknown symbol '" + std::string(1, c) + "' at position " + str(static_cast<std::int64_t>(at)) +
           " (E embedding, t transformer layer, L loss, | next stage, x*n and (...)*n repeat)");
    }
    skip_commas();
    if (pos_ < text_.size() && text_[pos_] == '*') {
      ++pos_;
      std::int64_t n = 0;
      const std::size_t digits = pos_;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_])) != 0) {
        n = n * 10 + (text_[pos_] - '0');
        if (n > static_cast<std::int64_t>(kMaxExpandedSymbols)) fail("repeat count too large");
        ++pos_;
      }
      if (pos_ == digits) fail("'*' at position " + str(static_cast<std::int64_t>(digits)) + " needs a count");
      if (unit.size() * static_cast<std::size_t>(n) > kMaxExpandedSymbols)
        fail("expands to more than " + str(kMaxExpandedSymbols) + " symbols");
      std::string rep;
      for (std::int64_t i = 0; i < n; ++i) rep += unit;
      return rep;
    }
    return unit;
  }

  const std::string& text_;
  std::size_t pos_ = 0;
};

// Layers per virtual stage from the explicit notation, checked against the model as Megatron's
// validate_layer_layout does.
std::vector<std::int64_t> explicit_layers(const Scenario& s) {
  const auto& p = s.parallel;
  const auto stages = parse_pipeline_layout(p.pipeline_layout);
  const auto n = static_cast<std::int64_t>(stages.size());
  if (n % p.pp != 0)
    throw ScenarioError(kLayoutField, str(n) + " virtual stages (separated by '|') are not a multiple of pp=" + str(p.pp));
  if (n != p.pp * p.vpp)
    throw ScenarioError(kLayoutField, str(n) + " virtual stages are " + str(n / p.pp) + " chunks per stage, but vpp=" + str(p.vpp));
  std::int64_t embeddings = 0, losses = 0, total = 0;
  std::vector<std::int64_t> layers;
  for (const auto& st : stages) {
    layers.push_back(std::count(st.begin(), st.end(), 't'));
    total += layers.back();
    embeddings += std::count(st.begin(), st.end(), 'E');
    losses += std::count(st.begin(), st.end(), 'L');
  }
  if (embeddings != 1 || losses != 1)
    throw ScenarioError(kLayoutField, "needs exactly one E and one L (got " + str(embeddings) + " and " + str(losses) + ")");
  if (stages.front().empty() || stages.front().front() != 'E')
    throw ScenarioError(kLayoutField, "the embedding E must open the first stage (Megatron's rule)");
  if (stages.back().empty() || stages.back().back() != 'L')
    throw ScenarioError(kLayoutField, "the loss L must close the last stage (Megatron's rule)");
  if (total != s.model.layers)
    throw ScenarioError(kLayoutField, "holds " + str(total) + " transformer layers, the model has " + str(s.model.layers));
  return layers;
}

// --decoder-first/last-pipeline-num-layers: the named stages hold their counts, the others share
// the rest evenly; every stage splits its layers evenly over its chunks.
std::vector<std::int64_t> uneven_layers(const Scenario& s) {
  const auto& p = s.parallel;
  const std::string field = p.first_stage_layers ? "parallel.first_stage_layers" : "parallel.last_stage_layers";
  if (p.account_for_embedding_in_pipeline_split || p.account_for_loss_in_pipeline_split)
    throw ScenarioError(field, "cannot be combined with account_for_embedding/loss_in_pipeline_split (Megatron's rule)");
  if (p.pp < 2) throw ScenarioError(field, "needs pp >= 2");
  for (const auto& [name, value] : {std::pair<const char*, std::optional<std::int64_t>>{"parallel.first_stage_layers", p.first_stage_layers},
                                    {"parallel.last_stage_layers", p.last_stage_layers}})
    if (value && *value % p.vpp != 0)
      throw ScenarioError(name, str(*value) + " layers do not split evenly over vpp=" + str(p.vpp) + " chunks");
  const std::int64_t rest = s.model.layers - p.first_stage_layers.value_or(0) - p.last_stage_layers.value_or(0);
  const std::int64_t others = p.pp - (p.first_stage_layers ? 1 : 0) - (p.last_stage_layers ? 1 : 0);
  if (others == 0 ? rest != 0 : (rest < others || rest % others != 0))
    throw ScenarioError(field, "the other " + str(others) + " stages cannot share the remaining " + str(rest) + " of the " +
                                   str(s.model.layers) + " layers evenly");
  const std::int64_t middle = others > 0 ? rest / others : 0;
  if (middle % p.vpp != 0)
    throw ScenarioError(field, "the other stages' " + str(middle) + " layers each do not split evenly over vpp=" + str(p.vpp) + " chunks");
  std::vector<std::int64_t> layers(static_cast<std::size_t>(p.pp * p.vpp));
  for (std::int64_t k = 0; k < p.pp * p.vpp; ++k) {
    const std::int64_t stage = k % p.pp;
    std::int64_t n = middle;
    if (stage == 0 && p.first_stage_layers) n = *p.first_stage_layers;
    if (stage == p.pp - 1 && p.last_stage_layers) n = *p.last_stage_layers;
    layers[static_cast<std::size_t>(k)] = n / p.vpp;
  }
  return layers;
}

// The embedding and the loss counted as layers of the split; their chunks build one layer less.
std::vector<std::int64_t> accounted_layers(const Scenario& s) {
  const auto& p = s.parallel;
  const std::string field = p.account_for_embedding_in_pipeline_split ? "parallel.account_for_embedding_in_pipeline_split"
                                                                       : "parallel.account_for_loss_in_pipeline_split";
  const std::int64_t e = p.account_for_embedding_in_pipeline_split ? 1 : 0, l = p.account_for_loss_in_pipeline_split ? 1 : 0;
  const std::int64_t counted = s.model.layers + e + l;
  if (counted % p.pp != 0)
    throw ScenarioError(field, str(s.model.layers) + " layers + " + str(e + l) + " = " + str(counted) + " not divisible by pp=" + str(p.pp));
  const std::int64_t per_stage = counted / p.pp;
  if (per_stage % p.vpp != 0)
    throw ScenarioError("parallel.vpp", str(per_stage) + " layers per stage (embedding and loss counted) not divisible by vpp=" + str(p.vpp));
  std::vector<std::int64_t> layers(static_cast<std::size_t>(p.pp * p.vpp), per_stage / p.vpp);
  layers.front() -= e;
  layers.back() -= l;
  if (layers.front() < 0 || layers.back() < 0)
    throw ScenarioError(field, "the first or last chunk has no layer to give up for the embedding and the loss");
  return layers;
}

bool even_split(const Scenario& s) {
  const auto& p = s.parallel;
  return p.pipeline_layout.empty() && !p.first_stage_layers && !p.last_stage_layers &&
         !p.account_for_embedding_in_pipeline_split && !p.account_for_loss_in_pipeline_split;
}

std::optional<ScenarioError> even_layers_error(const Scenario& s, bool messages = true) {
  const auto& p = s.parallel;
  const std::int64_t layers = s.model.layers;
  if (layers % p.pp != 0)
    return rule_error("parallel.pp", messages, [&] {
      return "pp=" + str(p.pp) + " does not divide the layers (" + str(layers) +
             "; parallel.first_stage_layers / last_stage_layers, account_for_*_in_pipeline_split "
             "or pipeline_layout make stages uneven)";
    });
  if (layers % (p.pp * p.vpp) != 0)
    return rule_error("parallel.vpp", messages, [&] { return "layers (" + str(layers) + ") not divisible by pp*vpp = " + str(p.pp * p.vpp); });
  return std::nullopt;
}

std::vector<std::int64_t> even_layers(const Scenario& s) {
  if (auto e = even_layers_error(s)) throw *e;
  const auto& p = s.parallel;
  return std::vector<std::int64_t>(static_cast<std::size_t>(p.pp * p.vpp), s.model.layers / (p.pp * p.vpp));
}

}  // namespace

PipelineLayout::PipelineLayout(std::int64_t stages, std::int64_t chunks_per_stage)
    : PipelineLayout(stages, chunks_per_stage,
                     std::vector<std::int64_t>(static_cast<std::size_t>(std::max<std::int64_t>(1, stages) *
                                                                        std::max<std::int64_t>(1, chunks_per_stage)),
                                               0)) {}

PipelineLayout::PipelineLayout(std::int64_t stages, std::int64_t chunks_per_stage, std::vector<std::int64_t> layers)
    : p_(std::max<std::int64_t>(1, stages)), v_(std::max<std::int64_t>(1, chunks_per_stage)), layers_(std::move(layers)) {
  if (static_cast<std::int64_t>(layers_.size()) != p_ * v_)
    throw InternalError("pipeline layout: " + str(static_cast<std::int64_t>(layers_.size())) + " virtual stages for " + str(p_) +
                        " x " + str(v_));
  first_.resize(layers_.size());
  std::exclusive_scan(layers_.begin(), layers_.end(), first_.begin(), std::int64_t{0});
}

std::int64_t PipelineLayout::layers(std::int64_t stage, std::int64_t chunk) const {
  return layers_[static_cast<std::size_t>(virtual_stage(stage, chunk))];
}

std::int64_t PipelineLayout::first_layer(std::int64_t stage, std::int64_t chunk) const {
  return first_[static_cast<std::size_t>(virtual_stage(stage, chunk))];
}

std::int64_t PipelineLayout::stage_layers(std::int64_t stage) const {
  std::int64_t n = 0;
  for (std::int64_t j = 0; j < v_; ++j) n += layers(stage, j);
  return n;
}

std::int64_t PipelineLayout::max_chunk_layers() const { return *std::max_element(layers_.begin(), layers_.end()); }

std::vector<std::string> parse_pipeline_layout(const std::string& text) {
  const std::string expanded = LayoutReader(text).read();
  std::vector<std::string> stages(1);
  for (const char c : expanded) {
    if (c == '|')
      stages.emplace_back();
    else
      stages.back() += c;
  }
  return stages;
}

PipelineLayout pipeline_layout(const Scenario& s) {
  const auto& p = s.parallel;
  const std::int64_t pp = std::max<std::int64_t>(1, p.pp), vpp = std::max<std::int64_t>(1, p.vpp);
  if (!p.pipeline_layout.empty()) {
    if (p.first_stage_layers || p.last_stage_layers || p.account_for_embedding_in_pipeline_split ||
        p.account_for_loss_in_pipeline_split)
      throw ScenarioError(kLayoutField,
                          "cannot be combined with first/last_stage_layers or account_for_*_in_pipeline_split (Megatron's rule)");
    return PipelineLayout(pp, vpp, explicit_layers(s));
  }
  if (p.first_stage_layers || p.last_stage_layers) return PipelineLayout(pp, vpp, uneven_layers(s));
  if (p.account_for_embedding_in_pipeline_split || p.account_for_loss_in_pipeline_split)
    return PipelineLayout(pp, vpp, accounted_layers(s));
  return PipelineLayout(pp, vpp, even_layers(s));
}

std::optional<ScenarioError> pipeline_layout_error(const Scenario& s, bool messages) {
  if (even_split(s)) return even_layers_error(s, messages);
  try {
    (void)pipeline_layout(s);
  } catch (const ScenarioError& e) {
    return e;
  }
  return std::nullopt;
}

std::int64_t stage_layers(const Scenario& s, std::int64_t stage) { return pipeline_layout(s).stage_layers(stage); }

}  // namespace stepsim::scenarios
