#!/bin/bash
cd /work/main
for v in before after before2 after2; do
  case $v in before*) b=/tmp/base2/build;; after*) b=build;; esac
  load=$(cut -d' ' -f1 /proc/loadavg)
  timeout 300 tests/fabric/launch.sh --name cz --hosts 8 --timeout 280 -- \
    $b/bench/osu/mccl_osu_bcast -m 16777216:16777216 -i 20 -x 3 -u 0 --compress bound:0.01 -f > /tmp/s22/bcastc-$v.log 2>&1
  echo "bcast compressed $v load $load: $(grep -E '^\[h0\] 16777216' /tmp/s22/bcastc-$v.log)"
done
