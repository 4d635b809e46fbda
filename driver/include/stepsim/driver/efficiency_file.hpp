#pragma once
// Efficiency files as `stepsim calibrate` writes them: {"source": ..., "fitted": "gemm_max,...", "gemm_max": ...,
// "attn_max": ..., "hbm_eff": ..., "comm_slowdown": ...}. The scenario loader reads them (cluster.gpu.efficiency = FILE, and the GPU
// presets' scenarios/presets/efficiency/<gpu>.json).

#include <string>

#include "stepsim/scenarios/scenario.hpp"

namespace stepsim::driver {

// The file's text: fixed key order, 9 significant digits, trailing newline.
[[nodiscard]] std::string efficiency_to_json(const scenarios::Efficiency& e, const std::string& source);

}  // namespace stepsim::driver
