#!/usr/bin/env bash
# Small-collective latency, 2 ranks on loopback (mccl_run), A = f5234ca, B = working tree
# (the TCP connection stops reading after a short read). ABBA order, $1 rounds.
set -u
rounds=${1:-8}
for round in $(seq 1 "$rounds"); do
  if [ $((round % 2)) = 1 ]; then order="A B"; else order="B A"; fi
  for side in $order; do
    if [ $side = A ]; then b=/tmp/base/build; else b=/work/main/build; fi
    echo "== round $round $side load $(cut -d' ' -f1 /proc/loadavg)"
    MCCL_COLL_BCAST_ALGO=binomial timeout 120 $b/tools/mccl_run -n 2 /bin/sh -c "exec taskset -c \$MCCL_RANK $b/bench/osu/mccl_osu_bcast -m 8:1024 -i 20000 -x 2000" 2>&1 | grep -E "^[0-9]" | sed "s/^/bcast $side /"
    timeout 120 $b/tools/mccl_run -n 2 /bin/sh -c "exec taskset -c \$MCCL_RANK $b/bench/osu/mccl_osu_allgather -m 8:1024 -i 20000 -x 2000" 2>&1 | grep -E "^[0-9]" | sed "s/^/allgather $side /"
  done
done
