#!/bin/bash
# The third call on the lent 16-core machine (2026-11-27), at 5bd75b5 (the AVX2 unpack
# and the leftward size exchange), over .devbench/ packed from that build:
#   lo     #25: one core's broadcast on loopback, authenticated and not, against Open MPI
#   cz1    #22: 8 hosts at 1 Gbit/s: reduce-scatter and the FSDP pair, exact and bound
#   cz10   #22: the same at 10 Gbit/s, compression forced (MCCL_COLL_COMPRESS_MAX_MBIT=-1)
#   r32    #33: 32 hosts at 1 Gbit/s, 1 MiB allgather
# SMOKE=1: small sizes and 4 hosts, to try the script on any machine.
set -u
D=$(dirname "$0")
. "$D/common.sh"

part lo 90 "${R[@]}" bench/loopback/run.sh --reps $(big 5 1) --impls mccl,ompi-default \
  --variant auth_on:MCCL_PROTO_AUTH=on --variant auth_off:MCCL_PROTO_AUTH=off \
  --size $(big 16m 1m) --build-dir $B --out $W/lo/out
tail -n 5 $W/lo/out/summary.txt

part cz1 110 "${R[@]}" bash -c "cases cz1 $N 1gbit 'rs-off reduce_scatter $RS off' \
  'rs-bound reduce_scatter $RS bound:0.01' 'agrs-off ag_rs_concurrent $M off' \
  'agrs-bound ag_rs_concurrent $M bound:0.01'"
cat $W/cz1/console.log

F=--mccl-env\ MCCL_COLL_COMPRESS_MAX_MBIT=-1
part cz10 90 "${R[@]}" bash -c "cases cz10 $N 10gbit 'rs-off reduce_scatter $RS off' \
  'rs-bound reduce_scatter $RS bound:0.01 $F' 'agrs-off ag_rs_concurrent $M off' \
  'agrs-bound ag_rs_concurrent $M bound:0.01 $F'"
cat $W/cz10/console.log

part r32 60 "${R[@]}" bench/fabric/run.sh --ranks $N32 --rate 1gbit --impls mccl --sizes $M32 \
  --benches allgather --scaling-ranks none --budget 3 --no-plots --build-dir $B --out $W/r32/out
grep -E '^allgather|switch ports|injected' $W/r32/out/summary.txt
echo DONE $(date -u +%T)
