#!/usr/bin/python3
"""Compression benchmark report: MCCL runs of bench/fabric/run.sh with
--osu-arg --compress MODE, one output folder per mode, side by side.

  bench/fabric/compress_report.py [--plot FILE.png] DIR...

Reads every DIR/raw/*.json (the OSU programs' JSON lines) and prints a
Markdown table per benchmark: time (median over iterations of the slowest
rank), the time relative to the uncompressed run ("off") of the same case,
the compression ratio, the bytes each rank put on its link per collective
relative to its own data, and the largest error observed (-c).
"""
import argparse
import glob
import json
import os


def load(dirs):
    rows = []
    for d in dirs:
        for path in sorted(glob.glob(os.path.join(d, "raw", "*.json"))):
            with open(path) as f:
                for line in f:
                    line = line.strip()
                    if line:
                        rows.append(json.loads(line))
    return rows


def human(b):
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= size:
            return f"{b / size:g} {unit}"
    return f"{b} B"


def per_rank_data(r):
    # reduce_scatter's size is the whole vector of each rank (OSU's).
    m = r["bytes_per_rank"]
    return m / r["ranks"] if r["bench"] == "reduce_scatter" else m


def table(rows, bench):
    sel = [r for r in rows if r["bench"] == bench]
    if not sel:
        return
    base = {(r["ranks"], r["bytes_per_rank"]): r["p50_max_us"] for r in sel
            if r.get("compress") == "off"}
    print(f"\n### {bench}\n")
    print("| ranks | size | mode | time (ms) | vs off | ratio | injected / m | largest error |")
    print("|---|---|---|---|---|---|---|---|")
    order = {"off": 0, "bf16": 1}
    for r in sorted(sel, key=lambda r: (r["ranks"], r["bytes_per_rank"],
                                        order.get(r.get("compress"), 2), r.get("compress", ""))):
        key = (r["ranks"], r["bytes_per_rank"])
        rel = f"{r['p50_max_us'] / base[key]:.2f}×" if key in base else "–"
        tx = r.get("tx_bytes_max")
        inj = f"{tx / per_rank_data(r):.2f}" if tx else "–"
        err = r.get("max_error", -1)
        print(f"| {r['ranks']} | {human(r['bytes_per_rank'])} | {r.get('compress', '?')} | "
              f"{r['p50_max_us'] / 1000:.1f} | {rel} | {r.get('ratio', 1):.2f} | {inj} | "
              f"{'–' if err < 0 else f'{err:.3g}'} |")


def plot(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    sel = [r for r in rows if r["bench"] == "allgather"]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for ax, n in zip(axes, (4, 8)):
        modes = sorted({r.get("compress") for r in sel if r["ranks"] == n})
        for mode in modes:
            pts = sorted((r["bytes_per_rank"], r["p50_max_us"] / 1000) for r in sel
                         if r["ranks"] == n and r.get("compress") == mode)
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=mode)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(f"allgather, {n} ranks, 1 Gbit/s")
        ax.set_xlabel("bytes per rank")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("time (ms)")
    axes[1].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--plot")
    a = ap.parse_args()
    rows = load(a.dirs)
    for bench in ("allgather", "reduce_scatter", "ag_rs_concurrent", "bcast"):
        table(rows, bench)
    if a.plot:
        plot(rows, a.plot)


if __name__ == "__main__":
    main()
