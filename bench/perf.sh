#!/usr/bin/env bash
# CPU-time figures of issue 13 (performance), all in CPU seconds (user + system, children
# included), so that runs on a shared machine compare:
#   - the GPT-3 175B / 4,096 A100 search (bench/sweeps/gpt3-175b-a100-4096.json) evaluated in one
#     process as a sweep worker does: candidates per CPU-second, pruned and simulated separately,
#     cost per candidate, and a digest of the rows (equal digests: identical results);
#   - `stepsim --version` (process start-up) and `stepsim run --engine analytic` of the default
#     scenario, CPU per run;
#   - sweep worker start-up: a fork of a process linked like stepsim that exits at once;
#   - the SimGrid engine at 512 ... 4,096 GPUs (Llama-3.1-70B, TP8 PP8, 64 micro-batches).
# Usage: bench/perf.sh BUILD_DIR [RUNS]   (needs the stepsim and perf_bench targets)
set -euo pipefail
build="${1:?usage: bench/perf.sh BUILD_DIR [RUNS]}"
runs="${2:-20}"
here="$(cd "$(dirname "$0")" && pwd)"
stepsim="$(cd "$build" && pwd)/app/stepsim"
bench="$(cd "$build" && pwd)/bench/perf_bench"
echo "$(date -u '+%F %H:%M UTC') $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "stepsim $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?'); stepsim links $(ldd "$stepsim" | wc -l) shared libraries"
echo
"$bench" sweep "$here/sweeps/gpt3-175b-a100-4096.json"
echo
printf '%-44s ' "stepsim --version (start-up)"; "$bench" exec "$runs" "$stepsim" --version
printf '%-44s ' "stepsim run --engine analytic (default)"; "$bench" exec "$runs" "$stepsim" run --engine analytic
printf '%-44s ' "sweep worker start-up"; "$bench" fork "$((runs * 5))"
echo
echo "SimGrid engine, llama-3.1-70b on H100, TP8 PP8, 64 micro-batches (one run each):"
for gpus in 512 1024 2048 4096; do
  dp=$((gpus / 64))
  printf '  %5d GPUs (DP %3d)                         ' "$gpus" "$dp"
  "$bench" exec 1 "$stepsim" run "$here/scenarios/llama70b-h100-1024.json" --engine simgrid \
    --set cluster.nodes=$((gpus / 8)) --set parallel.dp=$dp --set training.global_batch=$((64 * dp))
done
