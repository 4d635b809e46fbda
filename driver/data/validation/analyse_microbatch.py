#!/usr/bin/env python3
"""Per-micro-batch fixed time, measured and modelled, from pairs of runs that differ only in micro-batch size.

usage: stepsim validate --set-name fujii-2024-abci-a100,fujii-2024-tsubame-h100-sweep --format csv | analyse_microbatch.py

Two records of one table with the same layout and global batch, micro-batch sizes a < b, run m_a and m_b
micro-batches per pipeline. If a micro-batch of size s takes s t + X (t per sequence, X fixed per
micro-batch: host time, launches, latency-bound collectives, kernels that do not grow with the batch),
the step times give X = (b T_a / m_a - a T_b / m_b) / (b - a). The script prints X from the measured
step times and from stepsim's, per pair, then their median per set. A measured step time missing from
the CSV is derived from the measured TFLOP/s (the same FLOPs formula for both: T = T_pred x
predicted TFLOP/s / measured TFLOP/s). Pipeline bubbles also differ between a and b; the fixed time of
a layout with PP > 1 includes that difference in both columns.
"""
import csv
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent


def load_set(name, cache={}):
    if name not in cache:
        cache[name] = {r["name"]: r for r in json.loads((HERE / f"{name}.json").read_text())["records"]}
    return cache[name]


def measured_runs(stream):
    """The records of `stepsim validate --format csv` with a measurement: per row, the CSV row, the
    record's parallel and training sections, DP, micro-batches per pipeline m, and the measured and
    predicted step times (a measured step time missing from the CSV derived from the measured TFLOP/s)."""
    for row in csv.DictReader(stream):
        rec = load_set(row["set"])[row["record"]]
        sc = rec["scenario"]
        p, t = sc["parallel"], sc["training"]
        dp = p.get("dp") or 1
        m = t["global_batch"] // (t["micro_batch"] * dp)
        t_pred = float(row["predicted_step_time_s"])
        if row["measured_step_time_s"]:
            t_meas = float(row["measured_step_time_s"])
        elif row["measured_tflops_per_gpu"]:
            t_meas = t_pred * float(row["predicted_tflops_per_gpu"]) / float(row["measured_tflops_per_gpu"])
        else:
            continue
        yield row, p, t, dp, m, t_meas, t_pred


def main():
    groups = defaultdict(list)
    for row, p, t, dp, m, t_meas, t_pred in measured_runs(sys.stdin):
        mbs = t["micro_batch"]
        layout = (row["set"], row["table"], t["seq_len"], t["global_batch"], p["tp"], p["cp"], p["pp"], dp,
                  p.get("vpp", 1), row["gpu"])
        groups[layout].append((mbs, m, t_meas, t_pred, row["record"]))

    per_set = defaultdict(list)
    print("| set | table | layout | micro-batches | measured X (ms) | modelled X (ms) |")
    print("| --- | --- | --- | --- | ---: | ---: |")
    for layout, runs in sorted(groups.items(), key=lambda kv: str(kv[0])):
        runs.sort()
        for (a, ma, ta, pa, _), (b, mb, tb, pb, _) in zip(runs, runs[1:]):
            if b <= a:
                continue
            x_meas = (b * ta / ma - a * tb / mb) / (b - a)
            x_pred = (b * pa / ma - a * pb / mb) / (b - a)
            s, table, seq, gb, tp, cp, pp, dp, vpp, gpu = layout
            name = f"s{seq} tp{tp} cp{cp} pp{pp} dp{dp}" + (f" vpp{vpp}" if vpp and vpp > 1 else "")
            print(f"| {s} | {table} | {name} | {a}: {ma}, {b}: {mb} | {1e3 * x_meas:.1f} | {1e3 * x_pred:.1f} |")
            per_set[(s, gpu)].append((x_meas, x_pred))
    print()
    print("| set | GPU | pairs | median measured X (ms) | median modelled X (ms) |")
    print("| --- | --- | ---: | ---: | ---: |")
    for (s, gpu), xs in sorted(per_set.items()):
        print(f"| {s} | {gpu} | {len(xs)} | {1e3 * statistics.median(x for x, _ in xs):.1f} | "
              f"{1e3 * statistics.median(y for _, y in xs):.1f} |")


if __name__ == "__main__":
    main()
