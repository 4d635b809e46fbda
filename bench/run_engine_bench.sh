#!/usr/bin/env bash
# Simulated steps per second and peak RSS of `stepsim run` on the two benchmark scenarios, on
# both engines and both granularities. Usage: bench/run_engine_bench.sh [BUILD_DIR]
set -uo pipefail
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
bin="$build/app/stepsim"
printf '%-32s %-9s %-11s %8s %10s %12s %12s\n' scenario engine granularity ops wall_s steps_per_s peak_rss_MB
for f in "$here"/scenarios/llama70b-h100-1024.json "$here"/scenarios/llama405b-h100-16k.json; do
  for engine in analytic simgrid; do
    for gran in chunk layer; do
      out=$( { /usr/bin/time -f "TIME %e %M" "$bin" run "$f" --engine "$engine" --granularity "$gran" --format json; } 2>&1 )
      if ! grep -q '"step_time_s"' <<<"$out"; then
        printf '%-32s %-9s %-11s %s\n' "$(basename "$f" .json)" "$engine" "$gran" "not run: $(grep -m1 error <<<"$out")"
        continue
      fi
      ops=$(grep -m1 '"ops"' <<<"$out" | tr -dc 0-9)
      read -r _ wall rss <<<"$(grep TIME <<<"$out")"
      printf '%-32s %-9s %-11s %8s %10s %12.2f %12.1f\n' "$(basename "$f" .json)" "$engine" "$gran" "$ops" "$wall" \
        "$(echo "1 / ($wall + 0.001)" | bc -l)" "$(echo "$rss / 1024" | bc -l)"
    done
  done
done
