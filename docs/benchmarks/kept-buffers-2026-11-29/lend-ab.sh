#!/bin/bash
# Lent sends against copied ones (MCCL_X_NOLEND, a temporary switch in the build), 2-rank allgather and broadcast, thread engine, alternating.
b=/work/main/build
echo "# $(grep -m1 'model name' /proc/cpuinfo) | $(date -u +%FT%TZ) | load $(cut -d' ' -f1-3 /proc/loadavg)"
for rep in 1 2 3 4 5 6; do
  order="copy lend"; ((rep % 2 == 0)) && order="lend copy"
  for v in $order; do
    E=""; [[ $v == copy ]] && E="MCCL_X_NOLEND=1"
    for bench in allgather bcast; do
      for eng in thread offload; do
        r=$(env $E MCCL_PROGRESS=$eng timeout 100 $b/tools/mccl_run -n 2 -t 90 $b/bench/osu/mccl_osu_$bench -m 4194304:33554432 -i 10 -x 2 2>&1 | awk '/^[0-9]+ /{printf "%d:%s ", $1 / 1048576, $2}')
        echo "$rep $bench $eng $v $r"
      done
    done
  done
done
echo "# end $(date -u +%FT%TZ) | load $(cut -d' ' -f1-3 /proc/loadavg)"
