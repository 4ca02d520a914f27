#!/bin/bash
# The second call on the lent 16-core machine (2026-11-27), after the compressed
# collectives' size exchange went leftward (the FSDP pair's allgather no longer waits
# behind the reduce-scatter's bytes), over .devbench/ packed from that build:
#   cz1   #22: the FSDP pair at 8 hosts, 1 Gbit/s, exact and bound 1e-2 sigma
#   cz10  #22: 8 hosts at 10 Gbit/s: the pair, the reduce-scatter and the allgather,
#         exact and compressed (the rule overridden: MCCL_COLL_COMPRESS_MAX_MBIT=-1)
#   r32a, r32b  #33: 32 hosts at 1 Gbit/s, 1 MiB allgather, twice
# SMOKE=1: small sizes and 4 hosts, to try the script on any machine.
set -u
D=$(dirname "$0")
. "$D/common.sh"

part cz1 120 "${R[@]}" bash -c "cases cz1 $N 1gbit 'agrs-off ag_rs_concurrent $M off' \
  'agrs-bound ag_rs_concurrent $M bound:0.01' 'agrs-off2 ag_rs_concurrent $M off' \
  'agrs-bound2 ag_rs_concurrent $M bound:0.01'"
cat $W/cz1/console.log

F=--mccl-env\ MCCL_COLL_COMPRESS_MAX_MBIT=-1
part cz10 200 "${R[@]}" bash -c "cases cz10 $N 10gbit 'agrs-off ag_rs_concurrent $M off' \
  'agrs-bound ag_rs_concurrent $M bound:0.01 $F' 'rs-off reduce_scatter $RS off' \
  'rs-bound reduce_scatter $RS bound:0.01 $F' 'ag-off allgather $M off' \
  'ag-bound allgather $M bound:0.01 $F' 'agrs-bound-rule ag_rs_concurrent $M bound:0.01'"
cat $W/cz10/console.log

for k in a b; do
  part r32$k 90 "${R[@]}" bench/fabric/run.sh --ranks $N32 --rate 1gbit --impls mccl --sizes $M32 \
    --benches allgather --scaling-ranks none --budget 3 --no-plots --build-dir $B --out $W/r32$k/out
  grep -E '^allgather|switch ports|injected' $W/r32$k/out/summary.txt
done
echo DONE $(date -u +%T)
