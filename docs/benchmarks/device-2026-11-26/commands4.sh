#!/bin/bash
# The fifth call (2026-11-26): the 32-host allgather, 1 MiB per rank at 1 Gbit/s, before
# (81a93bf, .devbench-old/) and after (dab1568, .devbench/: the floor learned from a late
# chunk's lateness), alternating, two runs each, 25 timed iterations per run.
set -u
O=${OUT:?} W=/tmp/devout
mkdir -p $W
ag32() { local dev=$1 label=$2
  echo "=== $label $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)"
  timeout -k 5 45 bash $dev/run.sh bench/fabric/run.sh --ranks 32 --rate 1gbit --impls mccl \
    --sizes 1m --benches allgather --scaling-ranks none --budget 20 --no-plots \
    --build-dir $dev/build --label $label --out $W/$label >$W/$label.log 2>&1
  grep -E '^allgather +32' $W/$label/summary.txt; }
ag32 .devbench-old before-1; ag32 .devbench after-1; ag32 .devbench-old before-2; ag32 .devbench after-2
tar czf $O/r32ab.tgz -C $W .
echo DONE
