#!/usr/bin/env python3
"""Plots the small collectives of this folder's runs (README.md, "Small collectives"):
MCCL's inline engine (table before and after the choice by cores per rank), its thread
engine, and Open MPI's default, per collective and team size. Writes latency.png.
Usage: python3 plot_latency.py  (from this folder; needs matplotlib)."""
import json
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

RUNS = [  # folder, implementation, label
    ("lat-inline", "mccl", "MCCL inline, old table (call 1)"),
    ("lat-inline2", "mccl", "MCCL inline, old table (call 3)"),
    ("table-lat-new", "mccl", "MCCL inline, table by cores (call 4)"),
    ("lat-thread", "mccl", "MCCL thread, waiters spin (call 1)"),
    ("lat-inline", "ompi-default", "Open MPI default (call 1)"),
    ("lat-inline2", "ompi-default", "Open MPI default (call 3)"),
    ("table-lat-new", "ompi-default", "Open MPI default (call 4)"),
]
SIZES = [8, 1024, 65536]


def load(folder):
    out = {}
    for line in open(f"{folder}/results.jsonl"):
        r = json.loads(line)
        out[(r["bench"], r["ranks"], r["bytes_per_rank"], r["impl"])] = r["time_s"] * 1e6
    return out


data = {folder: load(folder) for folder, _, _ in RUNS}
fig, axes = plt.subplots(2, 3, figsize=(14, 8), sharex=True)
for row, bench in enumerate(["bcast", "allgather"]):
    for col, ranks in enumerate([2, 4, 8]):
        ax = axes[row][col]
        for folder, impl, label in RUNS:
            ys = [data[folder].get((bench, ranks, s, impl)) for s in SIZES]
            style = "--" if impl != "mccl" else "-"
            ax.plot(SIZES, ys, style, marker="o", label=label)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(f"{bench}, {ranks} ranks, 10 Gbit/s links")
        ax.set_xlabel("bytes per rank")
        ax.set_ylabel("µs (slowest rank, median)")
        ax.grid(True, which="both", alpha=0.3)
axes[0][0].legend(fontsize=7)
fig.suptitle("Small collectives on the 16-core machine (2026-11-26, namespace cluster)")
fig.tight_layout()
fig.savefig("latency.png", dpi=90)
