#include "stepsim/scenarios/scenario.hpp"

namespace stepsim::scenarios {

std::int64_t stage_layers(const Scenario& s, std::int64_t stage) {
  const auto& p = s.parallel;
  const bool first = p.first_stage_layers.has_value(), last = p.last_stage_layers.has_value();
  if (first && stage == 0) return *p.first_stage_layers;
  if (last && stage == p.pp - 1) return *p.last_stage_layers;
  const std::int64_t rest = s.model.layers - p.first_stage_layers.value_or(0) - p.last_stage_layers.value_or(0);
  const std::int64_t stages = p.pp - (first ? 1 : 0) - (last ? 1 : 0);
  return stages > 0 ? rest / stages : 0;
}

std::string to_string(Schedule s) {
  switch (s) {
    case Schedule::GPipe: return "gpipe";
    case Schedule::OneFOneB: return "1f1b";
    case Schedule::Interleaved: return "interleaved";
  }
  return "?";
}

std::string to_string(Recompute r) {
  switch (r) {
    case Recompute::None: return "none";
    case Recompute::Selective: return "selective";
    case Recompute::Full: return "full";
  }
  return "?";
}

std::string to_string(Attention a) { return a == Attention::Flash ? "flash" : "unfused"; }

std::string to_string(FabricTopology t) {
  switch (t) {
    case FabricTopology::RailFatTree: return "rail-fat-tree";
    case FabricTopology::FatTree: return "fat-tree";
    case FabricTopology::SingleSwitch: return "single-switch";
  }
  return "?";
}

}  // namespace stepsim::scenarios
