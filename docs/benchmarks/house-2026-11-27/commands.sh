#!/usr/bin/env bash
# The house A/B of 2026-11-27 as it ran: before = a68ac54 built in a worktree at /tmp/base
# (cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMCCL_TORCH=OFF
# -DMCCL_BUILD_TESTS=OFF), after = main at 57cf41d (/work/main/build, same build type).
# Part 1 (rounds 1-2, --budget 2) and part 2 (rounds 3-6, --budget 3): before then after.
# Part 3: 10 Gbit/s only, order alternating per round (ABBA).
set -u
cd /work/main
for rate in 1gbit 10gbit; do
  for round in 1 2; do
    for side in before after; do
      if [ $side = before ]; then b=/tmp/base/build; else b=/work/main/build; fi
      echo "== $rate round $round $side $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
      bench/fabric/run.sh --ranks 4 --rate $rate --impls mccl --sizes 64k,1m,16m \
        --benches bcast,allgather,reduce_scatter --scaling-ranks none --budget 2 --no-plots \
        --build-dir $b --label $side --out ab/$rate-$round-$side > ab/$rate-$round-$side.log 2>&1
      echo "rc=$?"
    done
  done
done
echo done $(date +%T)
set -u
cd /work/main
for rate in 1gbit 10gbit; do
  for round in 3 4 5 6; do
    for side in before after; do
      if [ $side = before ]; then b=/tmp/base/build; else b=/work/main/build; fi
      echo "== $rate round $round $side $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
      bench/fabric/run.sh --ranks 4 --rate $rate --impls mccl --sizes 64k,1m,16m \
        --benches bcast,allgather,reduce_scatter --scaling-ranks none --budget 3 --no-plots \
        --build-dir $b --label $side --out ab/$rate-$round-$side > ab/$rate-$round-$side.log 2>&1
      echo "rc=$?"
    done
  done
done
echo done $(date +%T)
set -u
cd /work/main
for round in 1 2 3 4 5 6 7 8; do
  if [ $((round % 2)) = 1 ]; then order="before after"; else order="after before"; fi
  for side in $order; do
    if [ $side = before ]; then b=/tmp/base/build; else b=/work/main/build; fi
    echo "== round $round $side $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
    bench/fabric/run.sh --ranks 4 --rate 10gbit --impls mccl --sizes 64k,1m \
      --benches bcast,reduce_scatter --scaling-ranks none --budget 3 --no-plots \
      --build-dir $b --label $side --out ab-10g-abba/10gbit-$round-$side > ab-10g-abba/10gbit-$round-$side.log 2>&1
    echo "rc=$?"
  done
done
echo done $(date +%T)
