#!/usr/bin/env bash
# #28 on the namespace cluster: 2 hosts at 10 Gbit/s, before = f5234ca (/tmp/base/build),
# after = 0678e0c (/work/main/build: the short-read change), Open MPI's default beside
# each run. ABBA order, 4 rounds.
set -u
cd /work/main
for round in 1 2 3 4; do
  if [ $((round % 2)) = 1 ]; then order="before after"; else order="after before"; fi
  for side in $order; do
    if [ $side = before ]; then b=/tmp/base/build; else b=/work/main/build; fi
    echo "== round $round $side $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
    bench/fabric/run.sh --ranks 2 --rate 10gbit --impls mccl,ompi-default --sizes 8,1k,64k \
      --benches bcast,allgather --scaling-ranks none --budget 2 --no-plots \
      --build-dir $b --label $side --out /tmp/ab3/10gbit-$round-$side > /tmp/ab3/10gbit-$round-$side.log 2>&1
    echo "rc=$?"
  done
done
echo done $(date +%T)
