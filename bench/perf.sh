#!/usr/bin/env bash
# CPU-time figures of issue 13 (performance), all in CPU seconds (user + system, children
# included), so that runs on a shared machine compare:
#   - the GPT-3 175B / 4,096 A100 search (bench/sweeps/gpt3-175b-a100-4096.json) evaluated in one
#     process as a sweep worker does: candidates per CPU-second, pruned and simulated separately,
#     cost per candidate, and a digest of the rows (equal digests: identical results);
#   - `stepsim --version` (process start-up) and `stepsim run --engine analytic` of the default
#     scenario, CPU per run;
#   - sweep worker start-up: a fork of a process linked like stepsim that exits at once;
#   - CPU and peak RSS of the largest analytic run: Llama-3.1-405B on 16,384 H100
#     (scenarios/llama405b-h100-16k.json) at layer granularity;
#   - the SimGrid engine at 512 ... 16,384 GPUs and Llama-3.1-405B on 16,384 H100, with their
#     peak RSS and the growth in DP (bench/simgrid_scale.sh).
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
echo "analytic engine, llama-3.1-405b on 16,384 H100, TP8 PP16 DP128, interleaved vpp 4, layer granularity:"
printf '  %-42s ' "16384 GPUs (DP 128)"
"$bench" exec 1 "$stepsim" run "$here/scenarios/llama405b-h100-16k.json" --engine analytic --granularity layer
echo
"$here/simgrid_scale.sh" "$build"
