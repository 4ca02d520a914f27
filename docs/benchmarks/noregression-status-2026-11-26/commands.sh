#!/bin/bash
# Before (a7532ce, this session's start) against after (this tree) in one
# session: the same scripts, two builds, alternating.
set -u
cd /work/main
O=/tmp/noreg-status
mkdir -p $O
run() { local name=$1; shift; echo "=== $name $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)"; bench/fabric/run.sh "$@" --out $O/$name --no-plots > $O/$name.log 2>&1; echo "rc=$?"; }
for rate in 1gbit 10gbit; do
  for rep in 1 2; do
    run $rate-before-$rep --ranks 4 --rate $rate --impls mccl --sizes 2m,16m --benches bcast,allgather,reduce_scatter --scaling-ranks none --build-dir /work/wtbase/build
    run $rate-after-$rep --ranks 4 --rate $rate --impls mccl --sizes 2m,16m --benches bcast,allgather,reduce_scatter --scaling-ranks none
  done
done
echo DONE
