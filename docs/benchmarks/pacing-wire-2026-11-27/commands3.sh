#!/bin/bash
cd /work/main
for v in before after; do
    if [[ $v == before ]]; then args=(--build-dir /tmp/base/build --pace-mbit 95); else args=(); fi
    echo "== $v $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)"
    timeout 900 bench/fabric/run.sh --ranks 32 --rate 100mbit --impls mccl --sizes 256k --benches allgather \
      --mtu 9000 --no-plots --out /tmp/s33/${v}-j "${args[@]}" > /tmp/s33/$v-j.log 2>&1
    echo "rc=$?"
done
echo ALLDONE
