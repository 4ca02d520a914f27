#!/usr/bin/env python3
"""Draws mccl_scale_sim's JSON lines as SVG line charts (no third-party modules).

    bench/scale/plot.py scale.jsonl OUTDIR [--label default]

Writes OUTDIR/scale_time.svg (completion time over the bound against N, per
collective and loss) and OUTDIR/scale_control.svg (control messages and reliable
peers per rank, the busiest rank, against N), and prints the rows of the label
as a markdown table."""
import argparse
import json
import math
import os

COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#17becf"]
W, H, L, R, T, B = 640, 360, 60, 200, 30, 45


def chart(title, ylabel, series, path):
    """series: [(name, [(n, y), ...])]; x on a log2 axis."""
    xs = [n for _, pts in series for n, _ in pts]
    ys = [y for _, pts in series for _, y in pts]
    if not xs:
        return
    x0, x1 = math.log2(min(xs)), math.log2(max(xs))
    y1 = max(ys) * 1.1 if max(ys) > 0 else 1
    px = lambda n: L + (math.log2(n) - x0) / max(x1 - x0, 1) * (W - L - R)
    py = lambda y: H - B - y / y1 * (H - T - B)
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'font-family="sans-serif" font-size="11">' % (W, H),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="18" font-size="13">%s</text>' % (L, title),
           '<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (L, H - B, W - R, H - B),
           '<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (L, T, L, H - B),
           '<text x="%d" y="%d">ranks (N)</text>' % ((W - R) // 2, H - 8),
           '<text x="12" y="%d" transform="rotate(-90 12 %d)">%s</text>' % (
               H // 2, H // 2, ylabel)]
    for n in sorted(set(xs)):
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%d</text>' % (px(n), H - B + 14, n))
    for i in range(6):
        y = y1 * i / 5
        out.append('<text x="%d" y="%.1f" text-anchor="end">%.3g</text>' % (L - 4, py(y) + 4, y))
        out.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>' % (
            L, py(y), W - R, py(y)))
    for i, (name, pts) in enumerate(series):
        c = COLOURS[i % len(COLOURS)]
        pts = sorted(pts)
        out.append('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>' % (
            c, " ".join("%.1f,%.1f" % (px(n), py(y)) for n, y in pts)))
        for n, y in pts:
            out.append('<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>' % (px(n), py(y), c))
        out.append('<text x="%d" y="%d" fill="%s">%s</text>' % (W - R + 8, T + 16 * i + 10, c, name))
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def table(rows):
    print("| collective | N | m | loss | time | bound | time/bound | repairs/m (max) | "
          "beyond loss/m | ctl msgs (max) | peers (max) | port drops | heap/rank |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print("| %s | %d | %d | %g%% | %.2f ms | %.2f ms | %.3f | %.3f | %.3f | %d | %d | %d | %.1f KiB |"
              % (r["bench"], r["ranks"], r["bytes"], r["loss"] * 100, r["time_us"] / 1e3,
                 r["bound_us"] / 1e3, r["ratio"], r["repairs_per_m_max"],
                 r["excess_repair_per_m_max"], r["control_msgs_max"], r["peers_max"],
                 r["port_drops"], r["state_bytes_per_rank"] / 1024))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("jsonl")
    ap.add_argument("outdir")
    ap.add_argument("--label", default="default")
    a = ap.parse_args()
    rows = [json.loads(l) for l in open(a.jsonl) if l.strip()]
    rows = [r for r in rows if r.get("label") == a.label]
    table(rows)
    rows = [r for r in rows if r.get("exact")]
    groups = {}
    for r in rows:
        groups.setdefault((r["bench"], r["loss"]), []).append(r)
    time_series, ctl_series = [], []
    for (bench, loss), rs in sorted(groups.items()):
        name = "%s, %g%% loss" % (bench, loss * 100)
        time_series.append((name, [(r["ranks"], r["ratio"]) for r in rs]))
        if bench != "reduce_scatter":
            ctl_series.append(("control msgs: " + name, [(r["ranks"], r["control_msgs_max"])
                                                          for r in rs]))
    peers = [r for r in rows if r["loss"] == 0]
    ctl_series.append(("reliable peers (all)", sorted({(r["ranks"], r["peers_max"]) for r in peers})))
    os.makedirs(a.outdir, exist_ok=True)
    chart("Completion time over the bound (virtual time, %s)" % a.label, "time / bound",
          time_series, os.path.join(a.outdir, "scale_time.svg"))
    chart("Per rank, busiest rank (%s)" % a.label, "count", ctl_series,
          os.path.join(a.outdir, "scale_control.svg"))


if __name__ == "__main__":
    main()
