#!/bin/bash
# The thread engine's 2-rank allgather alone (8 and 16 MiB), 10 launches of
# each build alternating; the base build in /tmp/base/build, the new one in
# /work/main/build. One line per launch: rep bench engine build size:avg_us ...
for rep in $(seq 10); do
  order="/tmp/base/build /work/main/build"; ((rep % 2 == 0)) && order="/work/main/build /tmp/base/build"
  for b in $order; do
    r=$(MCCL_PROGRESS=thread timeout 200 "$b/tools/mccl_run" -n 2 -t 180 "$b/bench/osu/mccl_osu_allgather" -m 8388608:16777216 -i 40 -x 3 2>&1 | awk '/^[0-9]+ /{printf "%d:%s ", $1 / 1048576, $2}')
    echo "$rep allgather thread $( [[ $b == /tmp/base/build ]] && echo base || echo new) $r"
  done
done
