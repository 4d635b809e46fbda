#!/usr/bin/env bash
# The SimGrid engine at scale (issue 13): CPU seconds (user + system, the simulation process
# included) and peak RSS of one `stepsim run --engine simgrid` each:
#   - Llama-3.1-70B on H100, TP8 PP8, 64 micro-batches per replica, DP 8 ... 256 (512 ... 16,384 GPUs),
#     and the growth in DP: the CPU time per GPU at 16,384 GPUs over that at 512 (at most 1: at
#     most linear);
#   - Llama-3.1-405B on 16,384 H100, TP8 PP16 DP128 (scenarios/llama405b-h100-16k.json).
# Usage: bench/simgrid_scale.sh BUILD_DIR   (needs the stepsim and perf_bench targets; bench/perf.sh runs it)
set -euo pipefail
build="${1:?usage: bench/simgrid_scale.sh BUILD_DIR}"
here="$(cd "$(dirname "$0")" && pwd)"
stepsim="$(cd "$build" && pwd)/app/stepsim"
bench="$(cd "$build" && pwd)/bench/perf_bench"
echo "$(date -u '+%F %H:%M UTC') $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); stepsim $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?')"

# One run of `stepsim run ARGS` under perf_bench: prints LABEL, its CPU time and peak RSS; keeps
# the CPU milliseconds in $cpu_ms.
measure() {
  local label="$1" line
  shift
  line="$("$bench" exec 1 "$stepsim" run "$@")"
  printf '  %-42s %s\n' "$label" "$line"
  cpu_ms="${line%% ms CPU*}"
}

echo "SimGrid engine, llama-3.1-70b on H100, TP8 PP8, 64 micro-batches (one run each):"
first_gpus=512 last_gpus=16384
for gpus in 512 1024 2048 4096 8192 16384; do
  dp=$((gpus / 64))
  measure "$(printf '%5d GPUs (DP %3d)' "$gpus" "$dp")" "$here/scenarios/llama70b-h100-1024.json" --engine simgrid \
    --set cluster.nodes=$((gpus / 8)) --set parallel.dp=$dp --set training.global_batch=$((64 * dp))
  [[ $gpus == "$first_gpus" ]] && first_ms=$cpu_ms
  [[ $gpus == "$last_gpus" ]] && last_ms=$cpu_ms
done
awk -v a="$first_ms" -v b="$last_ms" -v ga="$first_gpus" -v gb="$last_gpus" 'BEGIN {
  printf "  growth in DP, %d -> %d GPUs (%gx the GPUs): %.1fx the CPU time; CPU per GPU at %d / at %d: %.2f (at most linear: <= 1)\n",
    ga, gb, gb / ga, b / a, gb, ga, (b / gb) / (a / ga) }'
echo "SimGrid engine, llama-3.1-405b on 16,384 H100, TP8 PP16 DP128, interleaved vpp 4, 16 micro-batches:"
measure "$(printf '%5d GPUs (DP %3d)' 16384 128)" "$here/scenarios/llama405b-h100-16k.json" --engine simgrid
