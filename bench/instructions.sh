#!/usr/bin/env bash
# Instructions executed by the sweep benchmark (perf_bench sweep), counted by Callgrind, whole and
# per stage of a candidate's evaluation. A count of instructions does not depend on what else the
# machine runs, so two builds compare on one run each where CPU seconds on a shared machine vary by
# a third from run to run; it does not see cache misses or page faults (bench/perf.sh measures
# those, as CPU time). Needs valgrind and the perf_bench target; about 50 times the bench's own CPU
# time (a minute for the GPT-3 search).
# Usage: bench/instructions.sh [BUILD_DIR] [SWEEP.json]
set -euo pipefail
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
sweep=${2:-$here/sweeps/gpt3-175b-a100-4096.json}
bin="$build/bench/perf_bench"
command -v valgrind >/dev/null || { echo "instructions.sh: needs valgrind (apt-get install valgrind)" >&2; exit 2; }
command -v callgrind_annotate >/dev/null || { echo "instructions.sh: needs callgrind_annotate (valgrind)" >&2; exit 2; }
[ -x "$bin" ] || { echo "instructions.sh: no $bin (cmake --build $build --target perf_bench)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "$(date -u '+%Y-%m-%d %H:%M UTC') $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'))"
echo "stepsim $(git -C "$here/.." rev-parse --short HEAD 2>/dev/null || echo '?'); $(basename "$sweep")"
valgrind --tool=callgrind --callgrind-out-file="$work/out" "$bin" sweep "$sweep" >"$work/bench.txt" 2>"$work/valgrind.txt"
grep -E "candidates$|digest" "$work/bench.txt" | sed 's/^ */  /'
callgrind_annotate --inclusive=yes "$work/out" >"$work/inclusive.txt" 2>/dev/null
python3 - "$work/inclusive.txt" "$work/bench.txt" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
bench = open(sys.argv[2]).read()
total = int(re.search(r"([\d,]+) \(100\.0%\)\s+PROGRAM TOTALS", text).group(1).replace(",", ""))
m = re.search(r"simulated \((\d+)\)", bench)
simulated = int(m.group(1)) if m else 0
m = re.search(r"pruned \((\d+)\)", bench)
pruned = int(m.group(1)) if m else 0
# Inclusive counts; a function listed under several file names is counted once (its largest line).
stages = [
    ("enumeration (counting pass)", "stepsim::scenarios::count_candidates("),
    ("scenario JSON", "stepsim::scenarios::load_scenario_text("),
    ("memory verdict", "stepsim::driver::memory_verdict("),
    ("graph build", "stepsim::sim::build_step_graph("),
    ("costing", "stepsim::sim::cost_step("),
    ("replay and tally", "stepsim::sim::replay_in_index_order("),
    ("memory timeline", "stepsim::sim::memory_timeline("),
    ("report", "stepsim::report::make_report("),
    ("result row", "stepsim::report::row_line("),
]
def inclusive(name):
    best = 0
    for line in text.splitlines():
        if name in line:
            n = re.match(r"\s*([\d,]+)", line)
            if n:
                best = max(best, int(n.group(1).replace(",", "")))
    return best
print(f"  {'instructions, whole run':32s} {total:>15,d}")
candidates = simulated + pruned
if candidates:
    print(f"  {'per candidate (' + str(candidates) + ')':32s} {total / candidates:>15,.0f}")
for label, name in stages:
    n = inclusive(name)
    print(f"  {label:32s} {n:>15,d} {100.0 * n / total:6.1f} %")
EOF
