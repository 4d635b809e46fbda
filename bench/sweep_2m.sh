#!/usr/bin/env bash
# A sweep of N candidates (default 2,000,000) in bounded memory: Llama-3.1-405B on 64 H100 (8
# nodes), TP and micro-batch in {1,2,4,8} each, and N/16 prices per GPU-hour. Every candidate is evaluated (the
# memory estimate prunes them all: 405B does not fit on 64 GPUs), so the figures measure the
# enumeration, the workers, the results file and its sort, not the simulation.
# Prints wall time and the peak RSS of the sweep, a --resume of the finished sweep, a merge and a
# report of its results.  Usage: bench/sweep_2m.sh BUILD_DIR [N] [JOBS]
set -euo pipefail
build="${1:?usage: bench/sweep_2m.sh BUILD_DIR [N] [JOBS]}"
n="${2:-2000000}"
jobs="${3:-2}"
stepsim="$build/app/stepsim"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
prices=$((n / 16))
python3 - "$prices" > "$work/sweep.json" <<'PY'
import json, sys
k = int(sys.argv[1])
print(json.dumps({"name": "bench-2m",
  "base": {"model": "llama-3.1-405b", "cluster": {"preset": "dgx-h100", "nodes": 8},
           "training": {"seq_len": 8192, "global_batch": 512}},
  "axes": {"parallel.tp": [1, 2, 4, 8], "training.micro_batch": [1, 2, 4, 8],
           "cost.usd_per_gpu_hour": [round(1 + i / 1000, 3) for i in range(k)]}}))
PY
measure() {  # label, command...
  local label="$1"; shift
  /usr/bin/time -f "%e %M" -o "$work/time" "$@" > /dev/null 2> "$work/err" || { cat "$work/err"; exit 1; }
  read -r wall rss < "$work/time"
  printf '%-34s %9.1f s %9.0f MiB\n' "$label" "$wall" "$(echo "$rss / 1024" | bc -l)"
}
echo "$(date -u +%F) $(nproc) CPUs, $n candidates, -j $jobs"
printf '%-34s %11s %13s\n' "step" "wall" "peak RSS"
measure "sweep" "$stepsim" sweep "$work/sweep.json" -j "$jobs" -q --max-candidates "$n" --out "$work/out"
rows=$(wc -l < "$work/out/results.jsonl")
size=$(du -m "$work/out/results.jsonl" | cut -f1)
echo "results.jsonl: $rows rows, $size MiB"
measure "sweep --resume (nothing left)" "$stepsim" sweep "$work/sweep.json" -j "$jobs" -q --resume --max-candidates "$n" --out "$work/out"
measure "merge" "$stepsim" merge "$work/out" --out "$work/merged.jsonl" --summary "$work/merged.md"
cmp -s "$work/merged.jsonl" "$work/out/results.jsonl" && echo "merge output identical to results.jsonl"
measure "report --format md" "$stepsim" report "$work/out" --format md --out "$work/report.md"
