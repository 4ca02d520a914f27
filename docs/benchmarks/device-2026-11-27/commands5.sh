#!/bin/bash
# The fifth call on the lent 16-core machine (2026-11-27), at 5bd75b5, over .devbench/:
#   rs10  #22: why the compressed reduce-scatter does not pay at 10 Gbit/s (8 hosts, 16 MiB
#         per rank, compression forced): exact, compressed as is, with 4x and 16x the
#         segment (MCCL_COLL_REDUCE_SEGMENT_BYTES), and under the thread engine
# SMOKE=1: small sizes and 4 hosts, to try the script on any machine.
set -u
D=$(dirname "$0")
. "$D/common.sh"

F=--mccl-env\ MCCL_COLL_COMPRESS_MAX_MBIT=-1
S4=--mccl-env\ MCCL_COLL_REDUCE_SEGMENT_BYTES=262144
S16=--mccl-env\ MCCL_COLL_REDUCE_SEGMENT_BYTES=1048576
T=--mccl-env\ MCCL_PROGRESS=thread
part rs10 150 "${R[@]}" bash -c "cases rs10 $N 10gbit 'off reduce_scatter $RS off' \
  'bound reduce_scatter $RS bound:0.01 $F' 'bound-seg4 reduce_scatter $RS bound:0.01 $F $S4' \
  'bound-seg16 reduce_scatter $RS bound:0.01 $F $S16' 'off-seg16 reduce_scatter $RS off $S16' \
  'bound-thread reduce_scatter $RS bound:0.01 $F $T' 'bound2 reduce_scatter $RS bound:0.01 $F'"
cat $W/rs10/console.log
echo DONE $(date -u +%T)
