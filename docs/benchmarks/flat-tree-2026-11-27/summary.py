#!/usr/bin/env python3
"""Medians per (where, ranks, size, series) of avg_us and p50_max_us from results.jsonl files."""
import json, statistics, sys, collections
rows = collections.defaultdict(list)
for path in sys.argv[1:]:
    for line in open(path):
        d = json.loads(line)
        if d.get("failed"):
            print("FAILED", d); continue
        rows[(d["where"], d["ranks"], d["bytes_per_rank"], d["series"])].append(d)
keys = sorted({k[:3] for k in rows})
print(f"{'where':9} {'n':>2} {'bytes':>6} | {'auto (flat) avg / p50max':>26} | {'binomial':>17} | {'ompi-default':>17} | auto/ompi avg")
for w, n, m in keys:
    cell = {}
    for s in ("mccl-auto", "mccl-binomial", "ompi-default"):
        v = rows.get((w, n, m, s), [])
        cell[s] = (statistics.median(x["avg_us"] for x in v), statistics.median(x["p50_max_us"] for x in v), len(v)) if v else None
    f = lambda c: f"{c[0]:7.1f} / {c[1]:7.1f}" if c else "-"
    ratio = cell["mccl-auto"][0] / cell["ompi-default"][0] if cell["mccl-auto"] and cell["ompi-default"] else float("nan")
    print(f"{w:9} {n:>2} {m:>6} | {f(cell['mccl-auto']):>26} | {f(cell['mccl-binomial']):>17} | {f(cell['ompi-default']):>17} | {ratio:.2f}")
