#!/usr/bin/env python3
"""Error of the megatron-lm-ci-memory set by group.

usage: stepsim validate --set-name megatron-lm-ci-memory --format csv | analyse_memory.py [--worst N]

Joins each row of the CSV with its record in megatron-lm-ci-memory.json (configuration, notes) and
prints, per grouping (model shape, TP/PP/CP/VPP, sharding, recompute, precision, attention, GPU,
test-name features), the record count, how many are within 5 %, MAPE and the median signed error;
then the worst records. The notes carry the steady allocated bytes after a step
(mem-allocated-bytes), printed beside the peak of the worst records.
"""
import csv
import json
import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path

SET = Path(__file__).resolve().parent / "megatron-lm-ci-memory.json"


def features(rec):
    sc = rec["scenario"]
    m, p, t = sc["model"], sc["parallel"], sc["training"]
    notes = rec["notes"]
    test = rec["name"].split("-", 2)[2].rsplit("-", 2)[0] if rec["name"].count("-") >= 3 else rec["name"]
    precision = notes.split("precision ", 1)[1].split(" ", 1)[0]
    steady = re.search(r"mem-allocated-bytes \(steady, max\) = ([0-9.e+]+)", notes)
    return {
        "model": f"{m['layers']}l-{m['hidden']}h-s{t['seq_len']}-{m.get('mlp', 'swiglu')}",
        "tp": p["tp"], "pp": p["pp"], "cp": p["cp"], "dp": p["dp"], "vpp": p.get("vpp", 1),
        "tp/pp/cp": f"tp{p['tp']} pp{p['pp']} cp{p['cp']}",
        "sp": p.get("sequence_parallel"),
        "sharding": p.get("sharding", "none"),
        "recompute": t.get("recompute", "none") + (f":{t.get('recompute_method')}:{t.get('recompute_num_layers')}"
                                                   if t.get("recompute") == "full" else ""),
        "precision": precision,
        "attention": t.get("attention"),
        "mbs": t["micro_batch"], "micro_batches": t["global_batch"] // (t["micro_batch"] * p["dp"]),
        "tied": m.get("tied_embeddings", True),
        "impl": "local" if "transformer-impl local" in notes else ("te" if "_te_" in test else "default"),
        "resume": "resume" in test,
        "container": "lts" if "(lts" in notes else "dev",
        "gpu": rec["name"].rsplit("-", 2)[-2] if rec["name"].endswith("gb") else rec["name"].rsplit("-", 1)[-1],
        "steady_gib": float(steady.group(1)) / 2**30 if steady else None,
        "test": test,
    }


def summary(errors):
    n = len(errors)
    within = sum(abs(e) <= 0.05 for e in errors)
    return n, within, 100 * sum(abs(e) for e in errors) / n, 100 * statistics.median(errors)


def main():
    worst = 25
    if "--worst" in sys.argv:
        worst = int(sys.argv[sys.argv.index("--worst") + 1])
    records = {r["name"]: r for r in json.loads(SET.read_text())["records"]}
    rows = [r for r in csv.DictReader(sys.stdin) if r["set"] == "megatron-lm-ci-memory"]
    data = []
    for r in rows:
        f = features(records[r["record"]])
        f.update(name=r["record"], error=float(r["error"]), predicted=float(r["predicted_peak_allocated_gib"]),
                 measured=float(r["measured_peak_allocated_gib"]))
        data.append(f)
    n, within, mape, med = summary([x["error"] for x in data])
    print(f"all: {within} of {n} within 5 %, MAPE {mape:.1f} %, median {med:+.1f} %, "
          f"max {100 * max(abs(x['error']) for x in data):.1f} %")
    for key in ("model", "tp/pp/cp", "vpp", "sp", "sharding", "recompute", "precision", "attention", "mbs",
                "micro_batches", "tied", "impl", "resume", "container", "gpu"):
        groups = defaultdict(list)
        for x in data:
            groups[x[key]].append(x["error"])
        print(f"\nby {key}:")
        for g, errs in sorted(groups.items(), key=lambda kv: str(kv[0])):
            n, within, mape, med = summary(errs)
            print(f"  {str(g):28s} n {n:3d}  within 5 % {within:3d}  MAPE {mape:5.1f} %  median {med:+6.1f} %")
    print(f"\nworst {worst}:")
    for x in sorted(data, key=lambda x: -abs(x["error"]))[:worst]:
        steady = f"{x['steady_gib']:.3f}" if x["steady_gib"] is not None else "-"
        print(f"  {x['error'] * 100:+6.1f} %  pred {x['predicted']:7.3f}  meas {x['measured']:7.3f}  steady {steady:>7s}  "
              f"{x['tp/pp/cp']} vpp{x['vpp']} {x['sharding']} {x['recompute']} {x['precision']} {x['attention']} "
              f"{x['impl']}  {x['name']}")


if __name__ == "__main__":
    main()
