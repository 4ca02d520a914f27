#!/bin/bash
# The fourth call (2026-11-26): the 32-host allgather, 1 MiB per rank at 1 Gbit/s, before
# (81a93bf, packed into .devbench-old/) and after (8c412b0, .devbench/) the loss deadline
# floor that late chunks raise, alternating, two runs each.
set -u
O=${OUT:?} W=/tmp/devout
mkdir -p $W
ag32() { local dev=$1 label=$2
  echo "=== $label $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)"
  timeout -k 5 60 bash $dev/run.sh bench/fabric/run.sh --ranks 32 --rate 1gbit --impls mccl \
    --sizes 1m --benches allgather --scaling-ranks none --budget 3 --no-plots \
    --build-dir $dev/build --label $label --out $W/$label >$W/$label.log 2>&1
  grep -E '^allgather +32' $W/$label/summary.txt; }
ag32 .devbench-old before-1; ag32 .devbench after-1; ag32 .devbench-old before-2; ag32 .devbench after-2
tar czf $O/r32ab.tgz -C $W .
echo DONE
