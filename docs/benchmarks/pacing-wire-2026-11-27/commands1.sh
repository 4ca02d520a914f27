#!/bin/bash
cd /work/main
for rep in 1 2; do
  for v in before after; do
    if [[ $v == before ]]; then args=(--build-dir /tmp/base/build --pace-mbit 95); else args=(); fi
    echo "== $rep $v $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)"
    timeout 900 bench/fabric/run.sh --ranks 32 --rate 100mbit --impls mccl --sizes 256k --benches bcast,allgather \
      --scaling-ranks 2,32 --scaling-size 256k --no-plots --out /tmp/s33/$v$rep "${args[@]}" > /tmp/s33/$v$rep.log 2>&1
    echo "rc=$?"
  done
done
echo ALLDONE
