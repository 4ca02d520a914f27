#!/usr/bin/python3
"""Turns a bench/fabric/run.sh output directory into results.jsonl, a summary
table (summary.txt, also printed) and plots (PNG, when matplotlib is there).

    report.py [--scaling-size BYTES] [--no-plots] DIR [DIR...]

Run by /usr/bin/python3 (the shebang): Debian's python3-matplotlib is installed
for that interpreter, not for a pyenv or venv one.

With several DIRs (e.g. runs at other MTUs or MCCL settings, told apart by
run.sh --label) the first one receives the merged report.

Each line of results.jsonl: bench, impl, variant, ranks, rate_mbit, rate_side
(both, or inject for ag_rs_concurrent), mtu, bytes_per_rank, time_s (slowest
rank per iteration, median over iterations), avg_us (OSU's average over ranks
of the per-rank mean), bound_s (allgather and alltoall: (N-1)*m/rate, what
each rank must receive; broadcast: m/rate; ag_rs_concurrent on send-limited links: N*m/rate,
what each rank must send at least: its m once for the allgather and its
contribution to the N-1 other blocks for the reduce-scatter), tx_bytes_max
and rx_bytes_max (largest per-host veth0 delta for one collective, headers
included), tx_packets_max, correct (every iteration's data checked and
right), iterations, load1 (load average when the case started), error.
"""
import argparse
import json
import os
import sys

IMPLS = ["mccl", "ompi-default", "ompi-best"]
BENCHES = ["bcast", "allgather", "alltoall", "ag_rs_concurrent"]


def bound_factor(bench, n):
    """Bytes per m that bound the time: see the module comment."""
    return {"allgather": n - 1, "alltoall": n - 1, "ag_rs_concurrent": n}.get(bench, 1)


def load(dirs):
    rows = []
    for d in dirs:
        path = os.path.join(d, "points.jsonl")
        if not os.path.exists(path):
            sys.exit(f"report.py: {path} missing (not a run.sh output directory?)")
        for line in open(path):
            p = json.loads(line)
            raw = {}
            rpath = os.path.join(d, p["raw"])
            if os.path.exists(rpath):
                lines = [l for l in open(rpath) if l.strip()]
                if lines:
                    raw = json.loads(lines[-1])
            n, m, rate = p["ranks"], p["bytes_per_rank"], p["rate_mbit"] * 1e6
            factor = bound_factor(p["bench"], n)
            ok = bool(raw) and p["rc"] == 0 and raw.get("validated") is True
            row = {
                "bench": p["bench"], "impl": p["impl"], "variant": p.get("variant", ""),
                "ranks": n, "rate_mbit": p["rate_mbit"], "rate_side": p.get("rate_side", "both"),
                "mtu": p["mtu"], "bytes_per_rank": m,
                "time_s": raw["p50_max_us"] / 1e6 if raw else None,
                "avg_us": raw.get("avg_us"), "bound_s": factor * m * 8 / rate,
                "tx_bytes_max": raw.get("tx_bytes_max"), "rx_bytes_max": raw.get("rx_bytes_max"),
                "tx_packets_max": raw.get("tx_packets_max"),
                "rx_packets_max": raw.get("rx_packets_max"),
                "correct": ok, "iterations": raw.get("iterations"), "load1": p["load1"],
                "config": p.get("config", []), "drops": p.get("drops"),
            }
            if "stats_sum" in raw:
                # Per collective, summed over ranks; the timed loop's barriers are in
                # the control counts too.
                it = raw["iterations"]
                for k in ("repairs_requested", "repair_bytes_requested", "dropped_invalid",
                          "dropped_stale", "dropped_duplicate", "early_arrivals_dropped",
                          "mcast_bytes_sent"):
                    row[k + "_per_op"] = raw["stats_sum"].get(k, 0) / it
            if not ok:
                row["error"] = ("exit status %d" % p["rc"]) if p["rc"] else (
                    "no result" if not raw else "validation failed")
            rows.append(row)
    return rows


def key(r):
    return (BENCHES.index(r["bench"]) if r["bench"] in BENCHES else 9, r["ranks"],
            r["bytes_per_rank"], r["bench"])


def label(r):
    return r["impl"] + ("/" + r["variant"] if r["variant"] else "")


def human(b):
    for unit, f in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= f and b % f == 0:
            return "%d %s" % (b // f, unit)
    return "%d B" % b


def fmt_t(t):
    if t is None:
        return "-"
    return "%.1f us" % (t * 1e6) if t < 1e-3 else ("%.2f ms" % (t * 1e3) if t < 1 else "%.3f s" % t)


def ratio(a, b):
    return "%.2f" % (a / b) if a and b else "-"


def repaired(r):
    """Repair bytes one rank asked for per collective (mean over ranks), over m."""
    if not r or "repair_bytes_requested_per_op" not in r or not r["bytes_per_rank"]:
        return "-"
    return "%.3f" % (r["repair_bytes_requested_per_op"] / r["ranks"] / r["bytes_per_rank"])


def summary(rows):
    by = {}
    for r in rows:
        by.setdefault(key(r), {})[label(r)] = r
    out = []
    hdr = ("%-16s %5s %8s | %10s %10s %10s %10s | %7s %7s %7s | %7s %7s %7s" %
           ("bench", "ranks", "size", "mccl", "bound", "ompi-def", "ompi-best",
            "/bound", "/best", "/def", "tx/ring", "rep/m", "ok"))
    out.append(hdr)
    out.append("-" * len(hdr))
    for k in sorted(by):
        c = by[k]
        # A run made with --label has only labelled rows: take those.
        pick = lambda impl: c.get(impl) or next((r for r in c.values() if r["impl"] == impl), None)
        mc, d, b = pick("mccl"), pick("ompi-default"), pick("ompi-best")
        t = lambda r: r["time_s"] if r else None
        ring_tx = b["tx_bytes_max"] if b else None
        ok = "/".join(("y" if r["correct"] else "N") if r else "-" for r in (mc, d, b))
        bound = (mc or d or b)["bound_s"]
        out.append("%-16s %5d %8s | %10s %10s %10s %10s | %7s %7s %7s | %7s %7s %7s" % (
            k[3], k[1], human(k[2]), fmt_t(t(mc)), fmt_t(bound), fmt_t(t(d)), fmt_t(t(b)),
            ratio(t(mc), bound), ratio(t(mc), t(b)), ratio(t(mc), t(d)),
            ratio(mc["tx_bytes_max"] if mc else None, ring_tx), repaired(mc), ok))
    out.append("mccl: time over the bound, over Open MPI best and default; tx/ring: bytes the "
               "busiest host injected per collective, MCCL over Open MPI best (ring allgather, "
               "pipelined chain broadcast, ring allgather + ring reduce-scatter); rep/m: repair "
               "bytes a rank asked for per collective (mean over ranks) over m; ok: data "
               "checked every iteration (mccl/def/best); ag_rs_concurrent: links limited on "
               "injection only.")
    return out


def drops(rows):
    """Where datagrams were lost, per case: run.sh's counts over the whole launch."""
    out = []
    for r in sorted(rows, key=key):
        d = r.get("drops")
        if not d:
            continue
        # A host's own datagrams, looped back and filtered, count as InErrors
        # (run.sh, drop_counts): what is beyond them is loss. Records from
        # before the field have no split.
        own = d.get("udp_own_looped")
        errors = "UDP InErrors %d" % d["udp_in_errors"]
        if own is not None:
            errors = "UDP InErrors %d beyond the hosts' own looped datagrams (%d)" % (
                d["udp_in_errors"] - own, own)
        out.append("%-13s %-16s %3d ranks %9s: switch ports (qdisc) %d, hosts (qdisc) %d, "
                   "%s (RcvbufErrors %d), repairs %s*m per rank" % (
                       label(r), r["bench"], r["ranks"], human(r["bytes_per_rank"]),
                       d["switch_qdisc"], d["host_qdisc"], errors,
                       d["udp_rcvbuf_errors"], repaired(r) or "-"))
    return out


def targets(rows, scaling_size):
    """The issue's targets, each with its measured figure (never asserted)."""
    mc = {key(r): r for r in rows if r["impl"] == "mccl" and not r["variant"]}
    best = {key(r): r for r in rows if r["impl"] == "ompi-best"}
    dflt = {key(r): r for r in rows if r["impl"] == "ompi-default"}
    out = []

    def verdict(ok):
        return "met" if ok else "MISSED"

    for n in sorted({k[1] for k in mc if k[3] == "allgather"}):
        ks = sorted(k for k in mc if k[3] == "allgather" and k[1] == n and k[2] >= 65536)
        for k in ks:
            r = mc[k]
            if r["tx_bytes_max"] is None or r["time_s"] is None:
                continue
            inj = r["tx_bytes_max"] / k[2]
            tb = r["time_s"] / r["bound_s"]
            b = best.get(k)
            vs = r["time_s"] / b["time_s"] if b and b["time_s"] else None
            out.append("allgather %d x %-8s injected %.3f*m (<= 1.05: %s), time %.2fx bound "
                       "(<= 1.10: %s), %s x Open MPI best (<= 1: %s)" % (
                           n, human(k[2]), inj, verdict(inj <= 1.05), tb, verdict(tb <= 1.10),
                           "%.2f" % vs if vs else "-", verdict(vs is not None and vs <= 1)))
    for k in sorted(k for k in mc if k[3] == "bcast" and k[2] == 16 << 20):
        r = mc[k]
        if r["time_s"] is None:
            continue
        tb = r["time_s"] / r["bound_s"]
        out.append("broadcast 16 MiB at %d ranks: %s = %.2fx bound (<= 1.10: %s)" % (
            k[1], fmt_t(r["time_s"]), tb, verdict(tb <= 1.10)))
    sc = {k[1]: mc[k] for k in mc if k[3] == "bcast" and k[2] == scaling_size}
    if 2 in sc and 8 in sc and sc[2]["time_s"] and sc[8]["time_s"]:
        q = sc[8]["time_s"] / sc[2]["time_s"]
        out.append("broadcast %s: 8 ranks %s, 2 ranks %s: %.2fx (<= 1.15: %s)" % (
            human(scaling_size), fmt_t(sc[8]["time_s"]), fmt_t(sc[2]["time_s"]), q,
            verdict(q <= 1.15)))
    for k in sorted(k for k in mc if k[2] == 8 and k[3] != "ag_rs_concurrent"):
        r, d = mc[k], dflt.get(k)
        if not d or r["time_s"] is None or d["time_s"] is None:
            continue
        q = r["time_s"] / d["time_s"]
        out.append("%s 8 B at %d ranks: mccl %s, Open MPI default %s: %.2fx (<= 1: %s)" % (
            k[3], k[1], fmt_t(r["time_s"]), fmt_t(d["time_s"]), q, verdict(q <= 1)))
    # FSDP: speed-up over Open MPI's ring pair against 0.9 * (2 - 2/N), where
    # injection (send-limited links) decides: 2(N-1)m for the rings, Nm for MCCL.
    for k in sorted(k for k in mc if k[3] == "ag_rs_concurrent" and k[2] >= 65536):
        r, b, d = mc[k], best.get(k), dflt.get(k)
        if r["time_s"] is None or not b or b["time_s"] is None:
            continue
        n = k[1]
        want = 0.9 * (2 - 2 / n)
        q = b["time_s"] / r["time_s"]
        qd = d["time_s"] / r["time_s"] if d and d["time_s"] else None
        out.append("ag_rs_concurrent %d x %-8s speed-up over ring pair %.2f (>= %.2f: %s), over "
                   "Open MPI default (libnbc) %s, time %.2fx bound" % (
                       n, human(k[2]), q, want, verdict(q >= want),
                       "%.2f" % qd if qd else "-", r["time_s"] / r["bound_s"]))
    return out


def plots(rows, outdir, scaling_size):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("report.py: no matplotlib (apt-get install python3-matplotlib): no plots",
              file=sys.stderr)
        return []
    made = []
    labels = sorted({label(r) for r in rows}, key=lambda l: (l.split("/")[0] not in IMPLS, l))
    benches = [b for b in BENCHES if any(r["bench"] == b for r in rows)]
    sweep_ranks = sorted({r["ranks"] for r in rows
                          if len({x["bytes_per_rank"] for x in rows
                                  if x["ranks"] == r["ranks"]}) > 1})
    if not sweep_ranks:
        return made

    def series(b, n, lab, field):
        pts = sorted((r["bytes_per_rank"], r[field]) for r in rows
                     if r["bench"] == b and r["ranks"] == n and label(r) == lab
                     and r.get(field) is not None)
        return [p[0] for p in pts], [p[1] for p in pts]

    for field, fname, ylabel in (("time_s", "time_vs_size.png", "time per collective (s)"),
                                 ("tx_bytes_max", "bytes_vs_size.png",
                                  "bytes injected by the busiest host per collective")):
        fig, axes = plt.subplots(len(benches), len(sweep_ranks), squeeze=False,
                                 figsize=(5.5 * len(sweep_ranks), 4.2 * len(benches)))
        for i, b in enumerate(benches):
            for j, n in enumerate(sweep_ranks):
                ax = axes[i][j]
                for lab in labels:
                    x, y = series(b, n, lab, field)
                    if x:
                        ax.plot(x, y, marker="o", ms=3, label=lab)
                sizes = sorted({r["bytes_per_rank"] for r in rows
                                if r["bench"] == b and r["ranks"] == n})
                f = bound_factor(b, n)
                rate = rows[0]["rate_mbit"] * 1e6
                if field == "time_s":
                    ax.plot(sizes, [f * m * 8 / rate for m in sizes], "k--", lw=1,
                            label="bound (link rate)")
                elif b == "bcast":
                    ax.plot(sizes, sizes, "k--", lw=1, label="m")
                elif b == "alltoall":  # every rank sends its N-1 blocks, whatever the library
                    ax.plot(sizes, [(n - 1) * m for m in sizes], "k--", lw=1, label="(N-1)m")
                else:
                    ring = (n - 1) * (2 if b == "ag_rs_concurrent" else 1)
                    ax.plot(sizes, [ring * m for m in sizes], "k--", lw=1,
                            label="%s ring" % ("2(N-1)m" if ring > n - 1 else "(N-1)m"))
                    ax.plot(sizes, [(n if b == "ag_rs_concurrent" else 1) * m for m in sizes],
                            "k:", lw=1, label="Nm" if b == "ag_rs_concurrent" else "m")
                ax.set_xscale("log", base=2)
                ax.set_yscale("log")
                ax.set_title("%s, %d ranks%s" % (
                    b, n, " (send-limited)" if b == "ag_rs_concurrent" else ""))
                ax.set_xlabel("bytes per rank")
                ax.set_ylabel(ylabel)
                ax.grid(True, which="both", alpha=0.3)
                ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(os.path.join(outdir, fname), dpi=110)
        plt.close(fig)
        made.append(fname)

    sc = [r for r in rows if r["bench"] == "bcast" and r["bytes_per_rank"] == scaling_size]
    if len({r["ranks"] for r in sc}) > 1:
        fig, ax = plt.subplots(figsize=(5.5, 4.2))
        for lab in labels:
            pts = sorted((r["ranks"], r["time_s"]) for r in sc
                         if label(r) == lab and r["time_s"] is not None)
            if pts:
                ax.plot([p[0] for p in pts], [p[1] * 1e3 for p in pts], marker="o", label=lab)
        ax.axhline(scaling_size * 8 / (sc[0]["rate_mbit"] * 1e6) * 1e3, color="k", ls="--",
                   lw=1, label="bound (link rate)")
        ax.set_xlabel("ranks")
        ax.set_ylabel("time (ms)")
        ax.set_ylim(bottom=0)
        ax.set_title("broadcast of %s" % human(scaling_size))
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(os.path.join(outdir, "bcast_vs_ranks.png"), dpi=110)
        plt.close(fig)
        made.append("bcast_vs_ranks.png")
    return made


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--scaling-size", type=int, default=1 << 20)
    ap.add_argument("--no-plots", action="store_true")
    a = ap.parse_args()
    outdir = a.dirs[0]
    rows = load(a.dirs)
    with open(os.path.join(outdir, "results.jsonl"), "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    loads = [r["load1"] for r in rows]
    lines = summary(rows)
    lost = drops(rows)
    if lost:
        lines += ["", "Where datagrams were lost (packets over each whole launch; a GSO "
                  "superpacket counts once):"] + ["  " + t for t in lost]
    lines += ["", "Targets (reported, never asserted):"] + ["  " + t for t in targets(
        rows, a.scaling_size)]
    if loads:
        lines.append("Load average (1 min) when cases started: %.1f to %.1f on %d cores." % (
            min(loads), max(loads), os.cpu_count()))
    if not a.no_plots:
        made = plots(rows, outdir, a.scaling_size)
        if made:
            lines.append("Plots: " + ", ".join(made))
    text = "\n".join(lines) + "\n"
    with open(os.path.join(outdir, "summary.txt"), "w") as f:
        f.write(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
