#!/bin/bash
cd /work/main
for v in off before after before2 after2; do
  case $v in before*) b=/tmp/base2/build; c=bound:0.01;; after*) b=build; c=bound:0.01;; off) b=build; c=off;; esac
  load=$(cut -d' ' -f1 /proc/loadavg)
  timeout 300 tests/fabric/launch.sh --name cz --hosts 8 --timeout 280 -- \
    $b/bench/osu/mccl_osu_ag_rs -m 16777216:16777216 -i 8 -x 2 -u 0 --compress $c -f > /tmp/s22/pair-$v.log 2>&1
  echo "pair $v load $load: $(grep -E '^\[h0\] 16777216' /tmp/s22/pair-$v.log)"
done
