#!/usr/bin/env bash
# The commands behind README.md, as they ran (2-core machine, nothing else running).
# BASE is a worktree of the commit before landing (d282b52) built with
#   cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMCCL_TORCH=OFF \
#         -DMCCL_BUILD_TESTS=OFF && ninja -C build tools/mccl_run bench/osu/mccl_osu_bcast \
#         bench/osu/mccl_osu_allgather
# and the current tree's build/ is the change (landing as of ad9569f). Each build alternates with the other,
# one invocation at a time, so that the machine's drift shows as spread, not as bias.
set -euo pipefail
BASE=${BASE:-/tmp/base/build}
OUT=${OUT:-/tmp/landing}
cd "$(dirname "$0")/../../.."

# 1. Loopback, 16 MiB broadcast, unpaced, auth on (default) and off, Open MPI beside.
for i in 1 2 3 4 5 6; do
  bench/loopback/run.sh --out "$OUT/loopback/base$i" --reps 1 -i 100 --impls mccl,ompi-default \
    --variant auth_on:MCCL_PROTO_AUTH=on --variant auth_off:MCCL_PROTO_AUTH=off \
    --build-dir "$BASE" --label base
  bench/loopback/run.sh --out "$OUT/loopback/landing$i" --reps 1 -i 100 --impls mccl \
    --variant auth_on:MCCL_PROTO_AUTH=on --variant auth_off:MCCL_PROTO_AUTH=off --label landing
done

# 2. The namespace fabric at 10 Gbit/s, 4 ranks (CPU-bound on 2 cores): no regression.
#    MTU 1500 (1,472-byte datagrams: nothing lands) and MTU 9000 (8,972: landing on).
for i in 1 2; do
  for mtu in 1500 9000; do
    bench/fabric/run.sh --ranks 4 --rate 10gbit --mtu $mtu --sizes 1m,16m --benches bcast,allgather \
      --scaling-ranks none --impls mccl --label base --budget 2 --no-plots \
      --build-dir "$BASE" --out "$OUT/fabric/base-mtu$mtu-$i"
    bench/fabric/run.sh --ranks 4 --rate 10gbit --mtu $mtu --sizes 1m,16m --benches bcast,allgather \
      --scaling-ranks none --impls mccl --label landing --budget 2 --no-plots \
      --out "$OUT/fabric/landing-mtu$mtu-$i"
  done
done
