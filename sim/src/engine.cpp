#include "stepsim/sim/engine.hpp"

#include "stepsim/scenarios/error.hpp"

namespace stepsim::sim {

std::string to_string(EngineKind e) {
  switch (e) {
    case EngineKind::Analytic: return "analytic";
    case EngineKind::SimGrid: return "simgrid";
  }
  return "unknown";
}

std::string_view to_string(Stream s) {
  switch (s) {
    case Stream::Compute: return "compute";
    case Stream::TpComm: return "tp comm";
    case Stream::CpComm: return "cp comm";
    case Stream::PpComm: return "pp comm";
    case Stream::DpComm: return "dp comm";
  }
  return "unknown";
}

Trace run(EngineKind engine, const StepGraph& graph, const topology::Cluster& cluster) {
  switch (engine) {
    case EngineKind::Analytic: return run_analytic(graph);
    case EngineKind::SimGrid: return run_simgrid(graph, cluster);
  }
  throw InternalError("unknown engine kind " + std::to_string(static_cast<int>(engine)));
}

}  // namespace stepsim::sim
