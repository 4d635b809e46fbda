#!/usr/bin/env bash
# Runs every libFuzzer harness for a bounded time: tests/fuzz/run.sh BUILD_DIR [SECONDS_EACH]
# BUILD_DIR is a clang build with -DSTEPSIM_FUZZ=ON. New inputs go to a scratch folder, never into
# the committed corpus; a crash leaves its reproducer in BUILD_DIR/fuzz-findings/ and fails the run.
set -euo pipefail
build="$1"
seconds="${2:-60}"
here="$(cd "$(dirname "$0")" && pwd)"
findings="$build/fuzz-findings"
mkdir -p "$findings"
status=0
for h in scenario:scenario_text sweep:sweep_text set:set_lines rows:results_rows; do
  corpus="${h%%:*}"
  exe="$build/tests/fuzz/fuzz_${h#*:}"
  scratch="$(mktemp -d)"
  echo "fuzz_${h#*:}: ${seconds} s"
  if ! "$exe" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -max_len=8192 -print_final_stats=1 \
       -artifact_prefix="$findings/" "$scratch" "$here/corpus/$corpus" 2>"$findings/${corpus}.log"; then
    status=1
    tail -40 "$findings/${corpus}.log"
  else
    grep -E "stat::number_of_executed_units|Done" "$findings/${corpus}.log" | tail -2
  fi
  rm -rf "$scratch"
done
exit $status
