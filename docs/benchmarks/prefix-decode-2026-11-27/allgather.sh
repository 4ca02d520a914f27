#!/bin/bash
# alternate before/after on cluster cz: 8 hosts at 1 Gbit/s
cd /work/main
for rep in 1 2 3; do
  for v in before after; do
    if [[ $v == before ]]; then b=/tmp/base2/build; else b=build; fi
    load=$(cut -d' ' -f1 /proc/loadavg)
    timeout 300 tests/fabric/launch.sh --name cz --hosts 8 --timeout 280 -- \
      $b/bench/osu/mccl_osu_allgather -m 16777216:16777216 -i 15 -x 3 -u 0 --compress bound:0.01 -f > /tmp/s22/ab-$v$rep.log 2>&1
    echo "$v$rep load $load: $(grep -E '^16777216' /tmp/s22/ab-$v$rep.log | head -1)"
  done
done
