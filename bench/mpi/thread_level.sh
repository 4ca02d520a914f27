#!/usr/bin/env bash
# thread_level.sh — what MPI_THREAD_MULTIPLE costs a single-threaded program under
# libmccl_mpi: the same broadcasts and allgathers, started at MPI_THREAD_SERIALIZED
# and at MPI_THREAD_MULTIPLE, alternating, in one run on this host.
#
#   bench/mpi/thread_level.sh --out DIR [--ranks N] [--sizes MIN:MAX] [-i ITERS]
#        [--reps R] [--build-dir DIR]
#
# Each rep runs, for each benchmark (bcast, allgather) and each level in turn,
#   mpirun.openmpi -n N (TCP on lo) -x LD_PRELOAD=BUILD/src/mpi/libmccl_mpi.so
#     -x MCCL_MPI_SINGLE_HOST=1 bench/fabric/mpi_coll_bench -b BENCH -m MIN:MAX
#     -i ITERS -x 10 -c --thread-level serialized|multiple
# (every size served by MCCL: MCCL_MPI_MIN_BYTES=1). The figure per size is
# p50_max_us (per iteration the slowest rank, median over iterations), then the
# median over reps; DIR/summary.txt gives multiple / serialized per size and the
# machine (CPU model, load average before and after). Defaults: 4 ranks,
# 1k:4m, 200 iterations, 5 reps. Run it on a quiet machine.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
out="" ranks=4 sizes=1024:4194304 iters=200 reps=5 build="$repo/build"
while [[ $# -gt 0 ]]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    -i) iters=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --build-dir) build=$2; shift 2 ;;
    *) echo "thread_level.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ -n $out ]] || { echo "usage: thread_level.sh --out DIR [...]" >&2; exit 2; }
command -v mpirun.openmpi >/dev/null || { echo "thread_level.sh: mpirun.openmpi missing: skipped"; exit 77; }
lib="$build/src/mpi/libmccl_mpi.so"
[[ -f $lib ]] || { echo "thread_level.sh: no $lib (build first)" >&2; exit 1; }
mkdir -p "$out/raw"
mpicc.openmpi -O2 -o "$out/mpi_coll_bench" "$repo/bench/fabric/mpi_coll_bench.c"
{
  echo "date: $(date -Is)"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //') x $(nproc)"
  echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "git: $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo '?')"
  echo "ranks: $ranks sizes: $sizes iterations: $iters reps: $reps"
} >"$out/machine.txt"
for ((rep = 1; rep <= reps; rep++)); do
  for bench in bcast allgather; do
    for level in serialized multiple; do
      timeout 300 mpirun.openmpi -n "$ranks" --oversubscribe --allow-run-as-root --bind-to none \
        --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo \
        -x LD_PRELOAD="$lib" -x MCCL_MPI_SINGLE_HOST=1 -x MCCL_MPI_MIN_BYTES=1 \
        "$out/mpi_coll_bench" -b "$bench" -m "$sizes" -i "$iters" -x 10 -c \
        --impl "$level" --thread-level "$level" --json "$out/raw/$bench-$level-$rep.jsonl" \
        >"$out/raw/$bench-$level-$rep.log" 2>&1
    done
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/machine.txt"
python3 - "$out" <<'PY' | tee "$out/summary.txt"
import glob, json, os, statistics, sys
out = sys.argv[1]
rows = {}
for path in glob.glob(os.path.join(out, "raw", "*.jsonl")):
    for line in open(path):
        r = json.loads(line)
        assert r["validated"] in (True, "true"), path
        rows.setdefault((r["bench"], r["bytes_per_rank"], r["impl"]), []).append(r["p50_max_us"])
print(open(os.path.join(out, "machine.txt")).read().rstrip())
print(f"{'bench':10} {'bytes':>9} {'serialized_us':>14} {'multiple_us':>12} {'ratio':>6}  (median of reps; min..max ratio)")
for bench in ("bcast", "allgather"):
    for size in sorted({k[1] for k in rows if k[0] == bench}):
        s, m = rows[(bench, size, "serialized")], rows[(bench, size, "multiple")]
        ratios = [b / a for a, b in zip(s, m)]
        print(f"{bench:10} {size:9d} {statistics.median(s):14.1f} {statistics.median(m):12.1f} "
              f"{statistics.median(m) / statistics.median(s):6.3f}  ({min(ratios):.3f}..{max(ratios):.3f})")
PY
