#include "stepsim/scenarios/scenario.hpp"

namespace stepsim::scenarios {

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
