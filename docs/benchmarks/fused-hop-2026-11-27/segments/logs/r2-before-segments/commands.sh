#!/bin/bash
# Compressed reduce-scatter and FSDP pair, 8 hosts at 1 Gbit/s: 95b520e (before) against the fused hop (after).
cd /work/main
for rep in 1 2 3; do
  for v in before after; do
    if [[ $v == before ]]; then b=/tmp/base5/build; else b=build; fi
    load=$(cut -d' ' -f1 /proc/loadavg)
    timeout 300 tests/fabric/launch.sh --name cz --hosts 8 --timeout 280 -- \
      $b/bench/osu/mccl_osu_reduce_scatter -m 16777216:16777216 -i 20 -x 2 -u 0 --compress bound:0.01 -f > docs/benchmarks/fused-hop-2026-11-27/segments/logs/r2-before-segments/rs-$v$rep.log 2>&1
    echo "rs $v$rep load $load: $(grep -E '^\[h0\] 16777216' docs/benchmarks/fused-hop-2026-11-27/segments/logs/r2-before-segments/rs-$v$rep.log)"
  done
done
load=$(cut -d' ' -f1 /proc/loadavg)
timeout 300 tests/fabric/launch.sh --name cz --hosts 8 --timeout 280 -- \
  build/bench/osu/mccl_osu_reduce_scatter -m 16777216:16777216 -i 20 -x 2 -u 0 -f > docs/benchmarks/fused-hop-2026-11-27/segments/logs/r2-before-segments/rs-off.log 2>&1
echo "rs off load $load: $(grep -E '^\[h0\] 16777216' docs/benchmarks/fused-hop-2026-11-27/segments/logs/r2-before-segments/rs-off.log)"
for rep in 1 2; do
  for v in before after; do
    if [[ $v == before ]]; then b=/tmp/base5/build; else b=build; fi
    load=$(cut -d' ' -f1 /proc/loadavg)
    timeout 300 tests/fabric/launch.sh --name cz --hosts 8 --timeout 280 -- \
      $b/bench/osu/mccl_osu_ag_rs -m 16777216:16777216 -i 8 -x 2 -u 0 --compress bound:0.01 -f > docs/benchmarks/fused-hop-2026-11-27/segments/logs/r2-before-segments/pair-$v$rep.log 2>&1
    echo "pair $v$rep load $load: $(grep -E '^\[h0\] 16777216' docs/benchmarks/fused-hop-2026-11-27/segments/logs/r2-before-segments/pair-$v$rep.log)"
  done
done
load=$(cut -d' ' -f1 /proc/loadavg)
timeout 300 tests/fabric/launch.sh --name cz --hosts 8 --timeout 280 -- \
  build/bench/osu/mccl_osu_ag_rs -m 16777216:16777216 -i 8 -x 2 -u 0 -f > docs/benchmarks/fused-hop-2026-11-27/segments/logs/r2-before-segments/pair-off.log 2>&1
echo "pair off load $load: $(grep -E '^\[h0\] 16777216' docs/benchmarks/fused-hop-2026-11-27/segments/logs/r2-before-segments/pair-off.log)"
