#!/bin/bash
# 32 namespace hosts at 100 Mbit/s: a7532ce (before the lost-tail rule)
# against this tree, one session, alternating.
set -u
cd /work/main
O=/tmp/r32-tails
mkdir -p $O
run() { local name=$1; shift; echo "=== $name $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)"; bench/fabric/run.sh "$@" --out $O/$name --no-plots > $O/$name.log 2>&1; echo "rc=$? $(date -u +%T)"; }
args=(--ranks 32 --rate 100mbit --impls mccl --sizes 256k --benches bcast,allgather --scaling-ranks none)
for rep in 1 2; do
  run before-$rep "${args[@]}" --build-dir /work/wtbase/build
  run after-$rep "${args[@]}"
done
echo DONE
