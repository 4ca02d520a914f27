#!/usr/bin/env bash
# The house A/B of 2026-11-27, as it ran (then as three scripts; the same runs in the
# same order): before = a68ac54 built in a worktree at /tmp/base (cmake -S . -B build
# -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMCCL_TORCH=OFF -DMCCL_BUILD_TESTS=OFF),
# after = main at 57cf41d (/work/main/build, same build type). Results go beside this
# script (ab/, ab-10g-abba/).
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd /work/main

# one RATE ROUND SIDE BUDGET SIZES BENCHES DIR: one bench/fabric/run.sh on 4 hosts.
one() {
  local build=/work/main/build
  [ "$3" = before ] && build=/tmp/base/build
  echo "== $1 round $2 $3 $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
  bench/fabric/run.sh --ranks 4 --rate "$1" --impls mccl --sizes "$5" --benches "$6" \
    --scaling-ranks none --budget "$4" --no-plots --build-dir "$build" --label "$3" \
    --out "$here/$7/$1-$2-$3" > "$here/$7/$1-$2-$3.log" 2>&1
  echo "rc=$?"
}

# Parts 1 (rounds 1-2, --budget 2) and 2 (rounds 3-6, --budget 3): before, then after.
for part in "1 2:2" "3 4 5 6:3"; do
  for rate in 1gbit 10gbit; do
    for round in ${part%:*}; do
      for side in before after; do
        one "$rate" "$round" "$side" "${part#*:}" 64k,1m,16m bcast,allgather,reduce_scatter ab
      done
    done
  done
done
# Part 3: 10 Gbit/s only, the order alternating per round (ABBA).
for round in 1 2 3 4 5 6 7 8; do
  order="before after"
  [ $((round % 2)) = 0 ] && order="after before"
  for side in $order; do one 10gbit "$round" "$side" 3 64k,1m bcast,reduce_scatter ab-10g-abba; done
done
echo done $(date +%T)
