#!/usr/bin/env bash
# The runs behind docs/benchmarks.md, "libmccl_mpi: the waiting caller drives
# progress, and a threshold per collective" (2-core machine, 2026-11-27).
# Run from the repository's root as root, nothing else running. BASE is a
# build of the commit before (5d37ff2, a worktree's build directory with
# tools/mccl_run, bench/osu and libmccl_mpi), NEW this one's.
set -euo pipefail
BASE=${BASE:-/tmp/base/build} NEW=${NEW:-$PWD/build} OUT=${OUT:-/tmp/mpi-min-bytes}
F=tests/fabric
mkdir -p "$OUT/ab"

# 1. Before and after, 2 ranks on the namespace cluster (10 Gbit/s, RPS on):
#    MPI programs under the preload (its default engine, the progress thread;
#    MCCL_MPI_MIN_BYTES=0 so that every size is MCCL's) and bench/osu under
#    MCCL_PROGRESS=thread, the builds alternating, 3 rounds.
mpicc.openmpi -O2 -o "$OUT/mpi_coll_bench" bench/fabric/mpi_coll_bench.c
$F/cluster.sh up --name mmb --hosts 2 --rate 10gbit --rps
trap '$F/cluster.sh down --name mmb >/dev/null 2>&1 || true' EXIT
for round in 1 2 3; do
  for build in base new; do
    d=$BASE; [[ $build == new ]] && d=$NEW
    for bench in bcast allgather allreduce; do
      if [[ $bench != allreduce ]]; then
        $F/launch.sh --name mmb --hosts 2 --timeout 120 --env MCCL_PROGRESS=thread -- \
          "$d/bench/osu/mccl_osu_$bench" -m 8:1048576 -i 200 -x 20 --json "$OUT/ab/osu-$bench-$build.json"
      fi
      $F/launch.sh --mpirun --name mmb --hosts 2 --timeout 120 -- env "LD_PRELOAD=$d/src/mpi/libmccl_mpi.so" \
        MCCL_MPI_MIN_BYTES=0 "$OUT/mpi_coll_bench" -b $bench -m 8:1048576 -i 200 -x 20 \
        --json "$OUT/ab/preload-$bench-$build.json"
    done
  done
done
$F/cluster.sh down --name mmb
trap - EXIT

# 2. The crossovers against Open MPI that src/mpi/min_bytes.h holds.
bench/tune/mpi_crossover.sh --out "$OUT/r24" --ranks 2,4 --max-size 1m --repeat 3 -i 200 -x 20
bench/tune/mpi_crossover.sh --out "$OUT/r8" --ranks 8 --max-size 1m --repeat 2 -i 100 -x 10
