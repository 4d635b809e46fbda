#!/usr/bin/env python3
"""Work per micro-batch and per-step constant, measured and modelled, of runs that share one per-GPU layout.

usage: stepsim validate --set-name mlperf-llama31-405b,mlperf-gpt3-h100 --format csv | analyse_step_line.py

Runs of one table whose layout per GPU is the same (TP, CP, PP, virtual stages, micro-batch size, model)
and that differ only in the micro-batches per pipeline m (a strong-scaling series: DP grows, the global
batch grows less) fit a line step = (m + (p - 1) / v) t + E: t the time of one micro-batch through a
stage (forward and backward), E what every step pays once (the pipeline's ends, the step's exposed
collectives, the optimizer, host time). The script prints, per group of at least two runs with at least
two values of m, the least-squares t and E of the measured step times and of stepsim's, and the largest
residual of each line. Records measured in TFLOP/s only are left out.
"""
import csv
import json
import sys
from collections import defaultdict

from analyse_microbatch import load_set  # the set's records by name, read once


def fit(xs, ys):
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    t = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    e = my - t * mx
    return t, e, max(abs(y - (t * x + e)) for x, y in zip(xs, ys))


def main():
    groups = defaultdict(list)
    for row in csv.DictReader(sys.stdin):
        if not row["measured_step_time_s"]:
            continue
        rec = load_set(row["set"])[row["record"]]
        sc = rec["scenario"]
        p, tr = sc["parallel"], sc["training"]
        tp, cp, pp = p.get("tp", 1), p.get("cp", 1), p.get("pp", 1)
        v = p.get("vpp", 1)
        mbs, dp = tr["micro_batch"], p.get("dp") or 1
        m = tr["global_batch"] // (mbs * dp)
        key = (row["set"], row["table"], row["gpu"], json.dumps(sc["model"]), tp, cp, pp, v, mbs, tr.get("precision", "bf16"))
        groups[key].append((m + (pp - 1) / v, float(row["measured_step_time_s"]), float(row["predicted_step_time_s"]), m))
    print("set | table | GPU | layout | runs (m) | measured t, E (max residual) | stepsim t, E (max residual)")
    for key, runs in groups.items():
        if len(runs) < 2 or len({r[3] for r in runs}) < 2:
            continue
        s, table, gpu, _, tp, cp, pp, v, mbs, _ = key
        xs = [r[0] for r in runs]
        tm, em, rm = fit(xs, [r[1] for r in runs])
        tpred, epred, rp = fit(xs, [r[2] for r in runs])
        ms = ", ".join(str(r[3]) for r in sorted(runs, key=lambda r: -r[3]))
        print(f"{s} | {table} | {gpu} | TP{tp} CP{cp} PP{pp} v{v} mb{mbs} | {len(runs)} ({ms}) | "
              f"{1e3 * tm:.1f} ms, {em:.3f} s ({rm:.3f} s) | {1e3 * tpred:.1f} ms, {epred:.3f} s ({rp:.3f} s)")


if __name__ == "__main__":
    main()
