#!/usr/bin/env bash
# The memory a run takes against the sizes that drive it, and the per-item costs behind the memory
# budget (driver::kMemoryCosts, --memory-budget-gib). Runs `stepsim run` under /usr/bin/time for a
# few sizes on both engines, prints GPUs, ops, SimGrid flows, peak RSS and wall time per run, then
# the least-squares slopes: bytes per op, per GPU, per SimGrid flow and per GPU pair (route table).
# Last, the largest run the default budget accepts on the largest cluster, to check the estimate
# against its peak RSS, and the time to refuse the largest accepted runs of before.
# Usage: bench/memory_budget.sh [BUILD_DIR]   (builds nothing: needs stepsim and memory_bench)
set -uo pipefail
build=${1:-build}
bin="$build/app/stepsim"
sizes="$build/bench/memory_bench"
[[ -x $bin && -x $sizes ]] || { echo "build stepsim and memory_bench first (cmake --build $build --target stepsim memory_bench)" >&2; exit 2; }

rows=$(mktemp)
trap 'rm -f "$rows"' EXIT

# measure SERIES ENGINE GRANULARITY --set k=v ...: one row "series gpus ops flows rss_bytes wall_s est_bytes".
measure() {
  local series=$1 engine=$2 gran=$3
  shift 3
  local counts out
  counts=$("$sizes" "$engine" "$gran" "$@") || return
  out=$( { /usr/bin/time -f "TIME %e %M" "$bin" run --engine "$engine" --granularity "$gran" --memory-budget-gib 1000 "$@" --format json >/dev/null; } 2>&1 )
  read -r gpus _ ops flows _ _ est <<<"$counts"
  read -r _ wall rss_kb <<<"$(grep TIME <<<"$out")"
  echo "$series $gpus $ops $flows $((rss_kb * 1024)) $wall $est" | tee -a "$rows" >/dev/null
  printf '%-16s %-9s %10s %10s %11s %10.1f %8s %10.1f\n' "$series" "$engine" "$gpus" "$ops" "$flows" "$(echo "$rss_kb / 1024" | bc -l)" "$wall" \
    "$(echo "$est / 1048576" | bc -l)"
}

printf '%-16s %-9s %10s %10s %11s %10s %8s %10s\n' series engine gpus ops flows peak_MiB wall_s est_MiB
for gb in 40960 163840 327680; do
  measure analytic-ops analytic chunk --set training.global_batch=$gb
done
for nodes in 16384 65536 262144; do
  measure analytic-gpus analytic chunk --set model=llama-3.1-8b --set cluster.nodes=$nodes --set parallel.tp=8 --set parallel.pp=1 \
    --set training.seq_len=4096 --set training.global_batch=$nodes
done
for gb in 2048 8192 16384; do
  measure simgrid-ops simgrid chunk --set model=llama-3.1-8b --set cluster.nodes=1 --set parallel.tp=2 --set parallel.pp=4 \
    --set training.seq_len=8192 --set training.global_batch=$gb
done
for nodes in 16 32 64; do
  measure simgrid-gpus simgrid chunk --set model=llama-3.1-8b --set cluster.nodes=$nodes --set parallel.tp=8 --set parallel.pp=1 \
    --set training.seq_len=4096 --set training.global_batch=$((nodes * 2))
done

# slope SERIES XCOL: least-squares bytes per unit of column XCOL (2 gpus, 3 ops, 4 flows, 8 gpu pairs) within a series.
slope() {
  awk -v s="$1" -v c="$2" '$1 == s { x = (c == 8 ? $2 * $2 : $c); y = $5; n++; sx += x; sy += y; sxx += x * x; sxy += x * y }
    END { d = n * sxx - sx * sx; if (n < 2 || d == 0) print "n/a"; else printf "%.1f", (n * sxy - sx * sy) / d }' "$rows"
}
intercept() {
  awk -v s="$1" '$1 == s { x = $3; y = $5; n++; sx += x; sy += y; sxx += x * x; sxy += x * y }
    END { d = n * sxx - sx * sx; b = (n * sxy - sx * sy) / d; printf "%.1f", (sy - b * sx) / n / 1048576 }' "$rows"
}
echo
echo "fitted costs (least squares over each series)"
echo "  bytes per op, analytic:          $(slope analytic-ops 3)   (intercept $(intercept analytic-ops) MiB)"
echo "  bytes per op, simgrid:           $(slope simgrid-ops 3)"
echo "  bytes per GPU, analytic:         $(slope analytic-gpus 2)"
echo "  bytes per flow, simgrid (all growth of the simgrid-gpus series put on flows):     $(slope simgrid-gpus 4)"
echo "  bytes per GPU pair, simgrid (all growth of the simgrid-gpus series put on pairs): $(slope simgrid-gpus 8)"

echo
echo "largest analytic run on 4,194,304 GPUs that the default budget accepts (estimate against peak RSS):"
measure largest-default analytic layer --set model=llama-3.1-8b --set model.layers=8163 --set cluster.nodes=524288 --set parallel.tp=8 \
  --set parallel.pp=1 --set training.seq_len=4096 --set training.global_batch=67108864

echo
echo "--trace is streamed: the default scenario at global batch 163,840 without and with a trace (peak RSS, wall time, trace size)"
trace=$(mktemp)
for with in "" "--trace $trace"; do
  # shellcheck disable=SC2086
  out=$( { /usr/bin/time -f "TIME %e %M" "$bin" run --engine analytic --set training.global_batch=163840 $with >/dev/null; } 2>&1 )
  read -r _ wall rss_kb <<<"$(grep TIME <<<"$out")"
  label=${with:+with --trace}
  printf '  %-14s %8.1f MiB %6s s %s\n' "${label:-without}" "$(echo "$rss_kb / 1024" | bc -l)" "$wall" "${with:+$(stat -c %s "$trace") bytes}"
done
rm -f "$trace"

echo
echo "time to refuse (default budget): 20.0 M ops on 128 GPUs; 4,194,304 GPUs with 19.7 M ops"
for args in "--set training.global_batch=2857140" \
  "--granularity layer --set model=llama-3.1-8b --set model.layers=30784 --set cluster.nodes=524288 --set parallel.tp=8 --set parallel.pp=1 --set training.seq_len=4096 --set training.global_batch=67108864"; do
  # shellcheck disable=SC2086
  out=$( { /usr/bin/time -f "TIME %e %M" "$bin" run --engine analytic $args; } 2>&1 )
  read -r _ wall rss_kb <<<"$(grep TIME <<<"$out")"
  printf '  %s s, %s KiB peak: %s\n' "$wall" "$rss_kb" "$(grep -m1 'error' <<<"$out" | cut -c1-150)"
done
