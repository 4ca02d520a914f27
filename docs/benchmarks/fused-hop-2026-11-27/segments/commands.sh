#!/bin/bash
# Compressed reduce-scatter and FSDP pair, 8 hosts at 1 Gbit/s, 2-core AMD EPYC:
# 95b520e (before: the fused hop) against segments sized by their packed bytes,
# appended packing and the vectorised dequantise (after). OUT: the logs' folder.
cd /work/main
OUT=${OUT:-docs/benchmarks/fused-hop-2026-11-27/segments/logs}
for rep in 1 2 3 4; do
  for v in before after; do
    if [[ $v == before ]]; then b=/tmp/base5/build; else b=build; fi
    load=$(cut -d' ' -f1 /proc/loadavg)
    timeout 300 tests/fabric/launch.sh --name cz --hosts 8 --timeout 280 -- \
      $b/bench/osu/mccl_osu_reduce_scatter -m 16777216:16777216 -i 60 -x 3 -u 0 --compress bound:0.01 -f > $OUT/rs-$v$rep.log 2>&1
    echo "rs $v$rep load $load: $(grep -E '^\[h0\] 16777216' $OUT/rs-$v$rep.log)"
  done
done
for rep in 1 2; do
  load=$(cut -d' ' -f1 /proc/loadavg)
  timeout 300 tests/fabric/launch.sh --name cz --hosts 8 --timeout 280 -- \
    build/bench/osu/mccl_osu_reduce_scatter -m 16777216:16777216 -i 60 -x 3 -u 0 -f > $OUT/rs-off$rep.log 2>&1
  echo "rs off$rep load $load: $(grep -E '^\[h0\] 16777216' $OUT/rs-off$rep.log)"
done
for rep in 1 2 3; do
  for v in before after; do
    if [[ $v == before ]]; then b=/tmp/base5/build; else b=build; fi
    load=$(cut -d' ' -f1 /proc/loadavg)
    timeout 300 tests/fabric/launch.sh --name cz --hosts 8 --timeout 280 -- \
      $b/bench/osu/mccl_osu_ag_rs -m 16777216:16777216 -i 8 -x 2 -u 0 --compress bound:0.01 -f > $OUT/pair-$v$rep.log 2>&1
    echo "pair $v$rep load $load: $(grep -E '^\[h0\] 16777216' $OUT/pair-$v$rep.log)"
  done
done
load=$(cut -d' ' -f1 /proc/loadavg)
timeout 300 tests/fabric/launch.sh --name cz --hosts 8 --timeout 280 -- \
  build/bench/osu/mccl_osu_ag_rs -m 16777216:16777216 -i 8 -x 2 -u 0 -f > $OUT/pair-off.log 2>&1
echo "pair off load $load: $(grep -E '^\[h0\] 16777216' $OUT/pair-off.log)"
# The 128 MiB reduce-scatter (logs/rs128.out), run after the above:
for rep in 1 2; do for v in before after off; do
  if [[ $v == before ]]; then b=/tmp/base5/build; else b=build; fi
  c="--compress bound:0.01"; [[ $v == off ]] && c=""
  timeout 300 tests/fabric/launch.sh --name cz --hosts 8 --timeout 280 -- \
    $b/bench/osu/mccl_osu_reduce_scatter -m 134217728:134217728 -i 6 -x 1 -u 0 $c -f > $OUT/rs128-$v$rep.log 2>&1
done; done
# The segment sizes before the change (logs/segb.out), set through the environment on the
# build of 95b520e plus the vectorised dequantise and appended packing:
for rep in 1 2 3 4; do for seg in 65536 262144; do
  timeout 300 tests/fabric/launch.sh --name cz --hosts 8 --timeout 280 --env MCCL_COLL_REDUCE_SEGMENT_BYTES=$seg -- \
    build/bench/osu/mccl_osu_reduce_scatter -m 16777216:16777216 -i 60 -x 3 -u 0 --compress bound:0.01 -f > $OUT/segb-$seg-$rep.log 2>&1
done; done
