#!/usr/bin/env python3
"""Fits the GEMM shape parameters of a GPU preset to a measured table of GEMM throughput by shape.

The model is stepsim's (costmodel/src/compute.cpp, ComputeModel::gemm_tiling and gemm_compute_s): the
output is cut into the large tile (either way round) or the small square tile, whichever finishes first;
the tiles run in waves over the SMs; each tile costs its FLOPs plus gemm_k_overhead more elements of K,
at the per-SM rate (times gemm_small_tile_efficiency for the small tile). The absolute level is left to
the efficiency file's gemm_max (fitted end to end by stepsim calibrate), so the fit compares each shape's
throughput relative to the geometric mean of the table: it finds the small tile's side and efficiency and
the K overhead that give the least mean absolute relative error of those ratios.

Usage: fit_gemm_shapes.py [TABLE.csv] [--sms 132] [--tile 128x256]
"""
import argparse
import csv
import math
import os


def read_table(path):
    with open(path) as f:
        rows = [r for r in csv.DictReader(line for line in f if not line.startswith("#"))]
    return [(int(r["batch"]), float(r["m"]), float(r["n"]), float(r["k"]), float(r["tflops"])) for r in rows]


def throughput(shape, sms, tile, small, small_eff, k_overhead):
    """FLOP/s of one shape at a per-SM rate of 1, as the C++ model computes it."""
    b, m, n, k = shape
    options = [(tile[0], tile[1], 1.0), (tile[1], tile[0], 1.0)]
    if small > 0:
        options.append((small, small, small_eff))
    best = None
    for tm, tn, eff in options:
        tiles = math.ceil(m / tm) * math.ceil(n / tn) * b
        waves = math.ceil(tiles / sms)
        cost = waves * tm * tn / eff
        if best is None or cost < best[0]:
            best = (cost, tm, tn, eff, waves)
    _, tm, tn, eff, waves = best
    time = waves * 2.0 * tm * tn * (k + k_overhead) / (eff / sms)
    return 2.0 * b * m * n * k / time


def errors(table, sms, tile, small, small_eff, k_overhead):
    model = [throughput(r[:4], sms, tile, small, small_eff, k_overhead) for r in table]
    # Relative to the geometric mean of each: the level cancels.
    gm = math.exp(sum(math.log(x) for x in model) / len(model))
    gt = math.exp(sum(math.log(r[4]) for r in table) / len(table))
    return [(x / gm) / (r[4] / gt) - 1.0 for x, r in zip(model, table)]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("table", nargs="?", default=os.path.join(here, "gemm-h100-xla-sm90.csv"))
    ap.add_argument("--sms", type=int, default=132)
    ap.add_argument("--tile", default="128x256")
    args = ap.parse_args()
    table = read_table(args.table)
    tile = tuple(int(x) for x in args.tile.split("x"))
    fits = []
    for small in (0, 64, 128):
        for eff100 in range(50, 101):
            if small == 0 and eff100 != 100:
                continue
            for k_overhead in range(0, 1025, 25):
                e = errors(table, args.sms, tile, small, eff100 / 100.0, k_overhead)
                mape = sum(abs(x) for x in e) / len(e)
                fits.append((mape, small, eff100 / 100.0, k_overhead, max(abs(x) for x in e)))
    fits.sort()
    base = min(f for f in fits if f[1] == 0 and f[3] == 0)
    print(f"{len(table)} shapes of {os.path.basename(args.table)}; large tile {tile[0]}x{tile[1]}, {args.sms} SMs")
    print(f"  no small tile, no K overhead: MAPE {100 * base[0]:.2f} %, max {100 * base[4]:.1f} %")
    for mape, small, eff, k_overhead, worst in fits[:5]:
        print(f"  gemm_small_tile {small}, gemm_small_tile_efficiency {eff:.2f}, gemm_k_overhead {k_overhead}: "
              f"MAPE {100 * mape:.2f} %, max {100 * worst:.1f} %")


if __name__ == "__main__":
    main()
