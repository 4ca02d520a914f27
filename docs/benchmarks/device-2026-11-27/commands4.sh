#!/bin/bash
# The fourth call on the lent 16-core machine (2026-11-27), at 5bd75b5, over .devbench/:
#   lat   #28: small broadcasts and allgathers, 2, 4 and 8 hosts at 10 Gbit/s, MCCL (inline
#         engine) beside Open MPI's default, after 2026-11-27's barrier and spin changes
# SMOKE=1: 2 and 4 hosts, to try the script on any machine.
set -u
D=$(dirname "$0")
. "$D/common.sh"

part lat 240 "${R[@]}" bench/fabric/run.sh --ranks $(big 2,4,8 2,4) --rate 10gbit \
  --impls mccl,ompi-default --sizes 8,1k,64k --benches bcast,allgather --scaling-ranks none \
  --budget 1 --no-plots --build-dir $B --out $W/lat/out
grep -E '^(bcast|allgather)' $W/lat/out/summary.txt
echo DONE $(date -u +%T)
