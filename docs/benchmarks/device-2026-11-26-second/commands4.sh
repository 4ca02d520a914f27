#!/bin/bash
# The fourth call on the lent 16-core machine (2026-11-26, evening): the algorithm table
# chosen by the cores each rank has (coll/tuning.h; here 8, 4 and 2 cores per rank at 2,
# 4 and 8 ranks, so the table measured with cores to spare serves), against the table
# before (kSharedCoresCrossovers, the only one until now, forced with the crossover
# settings) in the same call:
#   lat   small broadcast/allgather, the new table, beside Open MPI's default
#   r2    2 ranks, 64 KiB to 16 MiB, old table then new
#   r4    4 ranks, 64 KiB to 16 MiB, old then new
#   agrs4 the FSDP pair at 4 ranks (allgather and reduce-scatter at once), old then new
#   thr   small collectives under the thread engine, its waiters spinning only for
#         latency-bound (point-to-point, at most 64 KiB) collectives
set -u
O=${OUT:?} W=/tmp/devout
mkdir -p $W
R=(bash .devbench/run.sh)
B=.devbench/build
part() { local name=$1 limit=$2; shift 2; mkdir -p $W/$name
  echo "=== $name $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)"
  timeout -k 5 "$limit" "$@" >$W/$name/console.log 2>&1; local rc=$?
  echo "=== $name rc=$rc $(date -u +%T)"; tar czf $O/$name.tgz -C $W $name; }
fab() { bench/fabric/run.sh --rate 10gbit --scaling-ranks none --budget 1 --no-plots --build-dir $B "$@"; }
old2=(--mccl-env MCCL_COLL_BCAST_MCAST_FROM_BYTES=32768 --mccl-env MCCL_COLL_ALLGATHER_MCAST_FROM_BYTES=524288)
old4=(--mccl-env MCCL_COLL_BCAST_MCAST_FROM_BYTES=131072 --mccl-env MCCL_COLL_ALLGATHER_MCAST_FROM_BYTES=32768)
export -f fab; export B W

part lat 45 "${R[@]}" bash -c 'fab --ranks 2,4,8 --sizes 8,1k,64k --benches bcast,allgather \
  --impls mccl,ompi-default --out $W/lat/new'
grep -A19 '^bench' $W/lat/new/summary.txt
part r2 60 "${R[@]}" bash -c "fab --ranks 2 --sizes 64k,256k,1m,4m,16m --benches bcast,allgather \
  --impls mccl ${old2[*]} --label old --out \$W/r2/old &&
  fab --ranks 2 --sizes 64k,256k,1m,4m,16m --benches bcast,allgather --impls mccl --label new --out \$W/r2/new"
for v in old new; do grep -E '^(bcast|allgather) ' $W/r2/$v/summary.txt; done
part r4 70 "${R[@]}" bash -c "fab --ranks 4 --sizes 64k,256k,1m,4m,16m --benches bcast,allgather \
  --impls mccl ${old4[*]} --label old --out \$W/r4/old &&
  fab --ranks 4 --sizes 64k,256k,1m,4m,16m --benches bcast,allgather --impls mccl --label new --out \$W/r4/new"
for v in old new; do grep -E '^(bcast|allgather) ' $W/r4/$v/summary.txt; done
part agrs4 50 "${R[@]}" bash -c "fab --ranks 4 --sizes 256k,1m --benches ag_rs_concurrent \
  --impls mccl ${old4[*]} --label old --out \$W/agrs4/old &&
  fab --ranks 4 --sizes 256k,1m --benches ag_rs_concurrent --impls mccl --label new --out \$W/agrs4/new"
for v in old new; do grep -E '^ag_rs' $W/agrs4/$v/summary.txt; done
part thr 40 "${R[@]}" bash -c 'fab --ranks 2,4,8 --sizes 8,1k,64k --benches bcast,allgather \
  --impls mccl --mccl-env MCCL_PROGRESS=thread --label thread --out $W/thr/thread'
grep -A19 '^bench' $W/thr/thread/summary.txt
echo DONE
