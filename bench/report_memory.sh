#!/usr/bin/env bash
# Peak memory and wall time of `stepsim report` on a large results file, in every format: the
# GPT-3 175B / 4,096 A100 search (bench/sweeps/gpt3-175b-a100-4096.json, 1,665 rows, pruned and
# simulated) swept once, then its rows written again under new indices and keys until the file
# has N rows (default 200,000), so that the report reads rows as a real sweep writes them.
# Usage: bench/report_memory.sh BUILD_DIR [N]
set -euo pipefail
build="${1:?usage: bench/report_memory.sh BUILD_DIR [N]}"
n="${2:-200000}"
here="$(cd "$(dirname "$0")" && pwd)"
stepsim="$build/app/stepsim"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$stepsim" sweep "$here/sweeps/gpt3-175b-a100-4096.json" -q --out "$work/sweep" > /dev/null
mkdir -p "$work/big"
python3 - "$n" "$work/sweep/results.jsonl" > "$work/big/results.jsonl" <<'PY'
import json, sys
n = int(sys.argv[1])
rows = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
for i in range(n):
    r = dict(rows[i % len(rows)])
    r["index"] = i
    r["key"] = r["key"] + " copy=" + str(i // len(rows))
    print(json.dumps(r, separators=(",", ":")))
PY
echo "$(date -u +%F) $(nproc) CPUs, results.jsonl: $(wc -l < "$work/big/results.jsonl") rows, $(du -m "$work/big/results.jsonl" | cut -f1) MiB"
printf '%-22s %9s %11s %12s\n' "format" "wall" "peak RSS" "output"
for f in md csv json html; do
  /usr/bin/time -f "%e %M" -o "$work/time" "$stepsim" report "$work/big" --format "$f" --out "$work/report.$f" 2> "$work/err" ||
    { cat "$work/err"; exit 1; }
  read -r wall rss < "$work/time"
  printf '%-22s %7.1f s %7.0f MiB %8.0f MiB\n' "report --format $f" "$wall" "$(echo "$rss / 1024" | bc -l)" \
    "$(echo "$(stat -c %s "$work/report.$f") / 1048576" | bc -l)"
done
