#!/usr/bin/env python3
"""How the time stepsim misses per micro-batch grows with the number of data-parallel replicas.

usage: stepsim validate --set-name fujii-2024-abci-a100 --format csv | analyse_dp_growth.py

For every layout (table set, sequence length, TP, CP, PP, micro-batch size) measured at three or more
data-parallel sizes, the gap per micro-batch g = (T_measured - T_predicted) / m (m micro-batches per
pipeline; a measured step time missing from the CSV is derived from the measured TFLOP/s, as in
analyse_microbatch.py) is fitted by least squares two ways:

- g = a + theta (H_DP - 1), H_n the n-th harmonic number: a delay per micro-batch that every replica
  draws independently from an exponential distribution of mean theta, when every micro-batch waits for
  the slowest replica, costs theta (H_DP - 1) more than at DP 1 (the expected maximum of DP such delays);
- g = a + b DP: a cost that grows linearly with the replicas.

It prints, per layout, the gaps (ms) by DP, theta and b with the root-mean-square residual of each fit.
One mechanism would show one theta (or one b) across layouts, or one in proportion to something the
layouts share.
"""
import math
import sys
from collections import defaultdict

from analyse_microbatch import measured_runs


def harmonic(n):
    return sum(1.0 / k for k in range(1, n + 1))


def line_fit(xs, ys):
    # Least squares y = a + b x; the slope, the intercept and the root-mean-square residual.
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx > 0 else 0.0
    a = my - b * mx
    rms = math.sqrt(sum((a + b * x - y) ** 2 for x, y in zip(xs, ys)) / n)
    return b, a, rms


def main():
    groups = defaultdict(list)
    for row, p, t, dp, m, t_meas, t_pred in measured_runs(sys.stdin):
        key = (row["set"], t["seq_len"], p.get("tp", 1), p.get("cp", 1), p.get("pp", 1), t["micro_batch"])
        groups[key].append((dp, 1e3 * (t_meas - t_pred) / m, 1e3 * t_pred / m))
    print("set, seq, TP, CP, PP, micro-batch: gap per micro-batch in ms by DP (predicted micro-batch time in ms)")
    print("  theta (ms), rms | b (ms per replica), rms")
    for key in sorted(groups):
        runs = sorted(groups[key])
        if len(runs) < 3:
            continue
        print(", ".join(str(k) for k in key) + ": " +
              " ".join(f"DP{dp} {g:.1f} ({t:.0f})" for dp, g, t in runs))
        theta, _, rms_h = line_fit([harmonic(dp) - 1 for dp, _, _ in runs], [g for _, g, _ in runs])
        slope, _, rms_l = line_fit([float(dp) for dp, _, _ in runs], [g for _, g, _ in runs])
        print(f"  theta {theta:.1f}, rms {rms_h:.1f} | b {slope:.2f}, rms {rms_l:.1f}")


if __name__ == "__main__":
    main()
