#pragma once
// Data embedded in the costmodel library at build time (costmodel/data/), so that no data path is
// needed at run time: the efficiency parameters per GPU type (data/efficiency/<gpu>.json).

#include <string>
#include <vector>

#include "stepsim/costmodel/compute.hpp"

namespace stepsim::costmodel {

// ---- efficiency files: {"source": "...", "gemm_max": ..., "gemm_half_flops": ..., "attn_max": ...,
// "attn_half_flops": ..., "hbm_eff": ..., "comm_slowdown": ...}; every key required, no others.

// GPU preset names with an embedded efficiency file, sorted.
std::vector<std::string> efficiency_gpu_names();
// The embedded file text of `gpu_name`; throws ScenarioError("cluster.gpu", ...) when there is none.
std::string efficiency_text(const std::string& gpu_name);
// Parses an efficiency file; throws ScenarioError(origin + "." + key, ...) on a missing, unknown or
// ill-typed key.
Efficiency efficiency_from_json(const std::string& text, const std::string& origin = "efficiency");
// Writes an efficiency file (fixed key order, 9 significant digits, trailing newline).
std::string efficiency_to_json(const Efficiency& e, const std::string& source);

}  // namespace stepsim::costmodel
