#!/usr/bin/env python3
"""What each step time misses, in milliseconds: measured minus predicted, per record, with its layout.

usage: stepsim validate --set-name mlperf-v51-llama31 --format csv | analyse_step_residual.py

Where a step is short (one micro-batch per replica, 0.05-0.5 s), a time that every step pays once shows
as a difference that does not scale with the step: the script prints, per table, each record's layout
(TP, CP, PP, DP, micro-batch size, micro-batches per replica m, whether CUDA graphs launch the passes),
its predicted and measured step time and their difference, then the median difference of the table.
Records measured in TFLOP/s only are left out.
"""
import csv
import statistics
import sys
from collections import defaultdict

from analyse_microbatch import load_set  # the set's records by name, read once


def main():
    tables = defaultdict(list)
    for row in csv.DictReader(sys.stdin):
        if not row["measured_step_time_s"]:
            continue
        sc = load_set(row["set"])[row["record"]]["scenario"]
        p, tr = sc["parallel"], sc["training"]
        software = sc.get("software")
        graphs = isinstance(software, dict) and software.get("cuda_graphs", False)
        m = tr["global_batch"] // (p["dp"] * tr["micro_batch"])
        predicted, measured = float(row["predicted_step_time_s"]), float(row["measured_step_time_s"])
        layout = f"TP{p.get('tp', 1)} CP{p.get('cp', 1)} PP{p.get('pp', 1)} DP{p['dp']} mb{tr['micro_batch']} m{m}"
        tables[(row["set"], row["table"])].append((row["record"], layout, "graphs" if graphs else "eager", m, predicted, measured))
    print("set | table | record | layout | launch | predicted ms | measured ms | measured - predicted ms")
    for (set_name, table), recs in tables.items():
        for name, layout, launch, m, predicted, measured in recs:
            print(f"{set_name} | {table} | {name} | {layout} | {launch} | {1e3 * predicted:.1f} | {1e3 * measured:.1f} | "
                  f"{1e3 * (measured - predicted):+.1f}")
        diff = statistics.median(1e3 * (r[5] - r[4]) for r in recs)
        print(f"{set_name} | {table} | median of {len(recs)} records | | | | | {diff:+.1f}")


if __name__ == "__main__":
    main()
