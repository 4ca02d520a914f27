#!/usr/bin/python3
"""latency_report.py: the tables and plot of a bench/osu/latency.sh run.

    latency_report.py DIR

Reads DIR/results.jsonl and writes DIR/table.md (also printed: per collective
and team size, p50_max_us per size and implementation; p50_max_us is, per
iteration, the slowest rank, median over iterations) and DIR/latency.png
(one panel per collective and team size; Debian's python3-matplotlib, for
/usr/bin/python3).
"""
import json, sys
out = sys.argv[1]
impls = ["mccl-inline", "mccl-thread", "ompi-default", "ompi-best"]
t, cycles = {}, {}
for line in open(f"{out}/results.jsonl"):
    r = json.loads(line)
    t.setdefault((r["bench"], r["ranks"]), {}).setdefault(r["series"], {})[r["bytes_per_rank"]] = r["p50_max_us"]
    if "cycle_us" in r:
        cycles.setdefault((r["bench"], r["ranks"]), {}).setdefault(r["series"], {})[r["bytes_per_rank"]] = r["cycle_us"]
lines = []
for table, what in ((t, "p50 of the slowest rank"), (cycles, "cycle: one iteration with its barrier")):
    for (bench, n), by in sorted(table.items()):
        sizes = sorted(set().union(*[set(v) for v in by.values()]))
        lines += [f"\n{bench}, {n} ranks ({what}, us)\n",
                  "| bytes | " + " | ".join(impls) + " |", "|---" * (len(impls) + 1) + "|"]
        for s in sizes:
            lines.append(f"| {s} | " + " | ".join(f"{by[i][s]:.1f}" if s in by.get(i, {}) else "-" for i in impls) + " |")
text = "\n".join(lines) + "\n"
open(f"{out}/table.md", "w").write(text)
print(text)
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    sys.exit(0)
keys = sorted(t)
fig, axes = plt.subplots(2, (len(keys) + 1) // 2, figsize=(5 * ((len(keys) + 1) // 2), 8), squeeze=False)
for ax, key in zip(axes.T.flat, keys):
    for i in impls:
        pts = sorted(t[key].get(i, {}).items())
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=".", label=i)
    ax.set_xscale("log", base=2); ax.set_yscale("log")
    ax.set_title(f"{key[0]}, {key[1]} ranks"); ax.set_xlabel("bytes per rank"); ax.set_ylabel("us")
    ax.grid(True, which="both", alpha=0.3); ax.legend(fontsize=7)
fig.tight_layout()
fig.savefig(f"{out}/latency.png", dpi=90)
