#!/bin/bash
cd /work/main
for rep in 1 2 3; do
  for v in before after; do
    if [[ $v == before ]]; then b=/tmp/base3/build; else b=build; fi
    load=$(cut -d' ' -f1 /proc/loadavg)
    timeout 300 tests/fabric/launch.sh --name cz --hosts 8 --timeout 280 -- \
      $b/bench/osu/mccl_osu_reduce_scatter -m 16777216:16777216 -i 20 -x 2 -u 0 --compress bound:0.01 -f > /tmp/s22/rsab-$v$rep.log 2>&1
    echo "rs $v$rep load $load: $(grep -E '^\[h0\] 16777216' /tmp/s22/rsab-$v$rep.log)"
  done
done
for rep in 1 2; do
  for v in before after; do
    if [[ $v == before ]]; then b=/tmp/base3/build; else b=build; fi
    load=$(cut -d' ' -f1 /proc/loadavg)
    timeout 300 tests/fabric/launch.sh --name cz --hosts 8 --timeout 280 -- \
      $b/bench/osu/mccl_osu_ag_rs -m 16777216:16777216 -i 8 -x 2 -u 0 --compress bound:0.01 -f > /tmp/s22/pairab-$v$rep.log 2>&1
    echo "pair $v$rep load $load: $(grep -E '^\[h0\] 16777216' /tmp/s22/pairab-$v$rep.log)"
  done
done
