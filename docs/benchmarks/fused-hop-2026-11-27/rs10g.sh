#!/bin/bash
# 2 hosts at 10 Gbit/s, a core per rank: does the compressed reduce-scatter (forced) pay?
cd /work/main
for rep in 1 2 3; do
  for v in off before after; do
    if [[ $v == before ]]; then b=/tmp/base4/build; else b=build; fi
    c="--compress bound:0.01"; [[ $v == off ]] && c=""
    load=$(cut -d' ' -f1 /proc/loadavg)
    timeout 200 tests/fabric/launch.sh --name c2 --hosts 2 --timeout 180 --env MCCL_COLL_COMPRESS_MAX_MBIT=-1 -- \
      $b/bench/osu/mccl_osu_reduce_scatter -m 16777216:16777216 -i 30 -x 3 -u 0 $c -f > docs/benchmarks/fused-hop-2026-11-27/logs/rs10g-$v$rep.log 2>&1
    echo "rs10g $v$rep load $load: $(grep -E '^\[h0\] 16777216' docs/benchmarks/fused-hop-2026-11-27/logs/rs10g-$v$rep.log)"
  done
done
