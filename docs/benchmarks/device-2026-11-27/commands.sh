#!/bin/bash
# The first call on the lent 16-core machine (2026-11-27), over .devbench/ packed by
# ../shared/devbench/prepare.sh from a RelWithDebInfo build of a2e9fb2:
#   cz1   #22: compressed collectives with a core per rank, 8 hosts at 1 Gbit/s, float32
#         Gaussian data (sigma 1): exact, bound 1e-2 sigma, bf16 (the targets)
#   r32   #33: 32 hosts at 1 Gbit/s, 1 MiB allgather and broadcast, broadcast at 2 hosts
#   cz10  #22: the compressed sums at 10 Gbit/s, 8 hosts, the rule overridden
#         (MCCL_COLL_COMPRESS_MAX_MBIT=-1) to see whether compressing pays there
# SMOKE=1 runs every part with small sizes and 4 hosts (to try the script on any machine).
set -u
D=$(dirname "$0")
. "$D/common.sh"

part cz1 230 "${R[@]}" bash -c "cases cz1 $N 1gbit 'ag-off allgather $M off' \
  'ag-bound allgather $M bound:0.01' 'ag-bf16 allgather $M bf16' 'rs-off reduce_scatter $RS off' \
  'rs-bound reduce_scatter $RS bound:0.01' 'agrs-off ag_rs_concurrent $M off' \
  'agrs-bound ag_rs_concurrent $M bound:0.01'"
cat $W/cz1/console.log

part r32 150 "${R[@]}" bench/fabric/run.sh --ranks $N32 --rate 1gbit --impls mccl --sizes $M32 \
  --benches bcast,allgather --scaling-ranks 2,$N32 --scaling-size $M32 --budget 3 --no-plots \
  --build-dir $B --out $W/r32/out
grep -E '^(bcast|allgather)|switch ports|injected' $W/r32/out/summary.txt

F=--mccl-env\ MCCL_COLL_COMPRESS_MAX_MBIT=-1
part cz10 130 "${R[@]}" bash -c "cases cz10 $N 10gbit 'rs-off reduce_scatter $RS off' \
  'rs-bound reduce_scatter $RS bound:0.01 $F' 'agrs-off ag_rs_concurrent $M off' \
  'agrs-bound ag_rs_concurrent $M bound:0.01 $F'"
cat $W/cz10/console.log
echo DONE $(date -u +%T)
