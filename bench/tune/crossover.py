#!/usr/bin/env python3
"""crossover.py: where a candidate implementation starts to beat a baseline.

    crossover.py RESULTS.jsonl --baseline A --candidate B --benches b1,b2,...
                 --max-size S [--whole-result b,...] [--metric M] --out DIR

RESULTS.jsonl holds the benchmark programs' JSON lines (bench/osu's or
mpi_coll_bench's), each with an added "algo" naming the implementation; a
size measured in several runs counts with the median of its metric. The
metric is p50_max_us (per iteration the slowest rank, median over
iterations; the default) or cycle_us (rank 0's time per iteration, the
collective and the barrier after it: what a loop of collectives takes,
including what one leaves behind for the next). Per (bench, ranks) the
crossover is the smallest size from which the candidate's metric is below
the baseline's at that size and at every larger size measured; 2*S when it
never is. A bench named in --whole-result has its crossover given as the whole
result's bytes (ranks * bytes per rank: an allgather's or reduce-scatter's
output) instead of a rank's block.

Writes DIR/table.txt (also printed: both columns per size, and the crossovers)
and DIR/rows.txt: one C++ initialiser row per team size,
"{ranks, crossover of b1, crossover of b2, ...},", for the tables in the code.
Used by crossover.sh (the algorithm table) and mpi_crossover.sh (libmccl_mpi's
thresholds).
"""
import argparse
import json
import statistics


def crossover(base, cand, never):
    sizes = sorted(set(base) & set(cand))
    c = never
    for s in reversed(sizes):
        if cand[s] < base[s]:
            c = s
        else:
            break
    return c, sizes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--baseline", required=True)
    ap.add_argument("--candidate", required=True)
    ap.add_argument("--benches", required=True)
    ap.add_argument("--max-size", type=int, required=True)
    ap.add_argument("--whole-result", default="")
    ap.add_argument("--metric", choices=["p50_max_us", "cycle_us"], default="p50_max_us")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    benches = a.benches.split(",")
    whole = set(filter(None, a.whole_result.split(",")))
    t = {}
    for line in open(a.results):
        r = json.loads(line)
        key = (r["bench"], r["ranks"])
        runs = t.setdefault(key, {}).setdefault(r["algo"], {})
        if r.get(a.metric) is not None:
            runs.setdefault(r["bytes_per_rank"], []).append(r[a.metric])
    for algos in t.values():
        for runs in algos.values():
            for size, values in runs.items():
                runs[size] = statistics.median(values)
    never = 2 * a.max_size
    lines, cross = [], {}
    for (bench, n), algos in sorted(t.items()):
        c, sizes = crossover(algos.get(a.baseline, {}), algos.get(a.candidate, {}), never)
        base, cand = algos.get(a.baseline, {}), algos.get(a.candidate, {})
        cross[(bench, n)] = c * n if bench in whole else c
        unit = f" ({n} x {c} B per rank)" if bench in whole else ""
        lines.append(f"{bench} at {n} ranks: crossover {cross[(bench, n)]} B{unit}")
        lines.append(f"  bytes/rank {a.baseline + '_us':>12} {a.candidate + '_us':>12}  ({a.metric})")
        lines += [f"  {s:<10} {base[s]:>12.1f} {cand[s]:>12.1f}" for s in sizes]
    ranks = sorted({n for _, n in t})
    rows = []
    for n in ranks:
        values = [str(cross.get((b, n), never * (n if b in whole else 1))) for b in benches]
        rows.append(f"    {{{n}, {', '.join(values)}}},")
    header = f"rows {{ranks, {', '.join(benches)}}}:"
    text = "\n".join(lines) + f"\n\n{header}\n" + "\n".join(rows) + "\n"
    with open(f"{a.out}/table.txt", "w") as f:
        f.write(text)
    with open(f"{a.out}/rows.txt", "w") as f:
        f.write("\n".join(rows) + "\n")
    print(text)


if __name__ == "__main__":
    main()
