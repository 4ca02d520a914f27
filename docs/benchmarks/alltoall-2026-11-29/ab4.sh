#!/bin/bash
# Base against new, 4 ranks on loopback (mccl_run), thread engine: the
# allgather, the reduce-scatter and the FSDP pair (ag_rs) from 256 KiB to
# 4 MiB, launches alternating. One line per launch:
#   rep bench build size_bytes:avg_us ...
# Usage: ab4.sh BASE_BUILD NEW_BUILD REPS > ab4.txt
base=$1 new=$2 reps=${3:-4}
echo "# $(grep -m1 'model name' /proc/cpuinfo) | $(date -u +%FT%TZ) | load $(cut -d' ' -f1-3 /proc/loadavg)"
for rep in $(seq "$reps"); do
  for bench in allgather reduce_scatter ag_rs; do
    order="$base $new"; ((rep % 2 == 0)) && order="$new $base"
    for b in $order; do
      r=$(MCCL_PROGRESS=thread timeout 200 "$b/tools/mccl_run" -n 4 -t 180 \
        "$b/bench/osu/mccl_osu_$bench" -m 262144:4194304 -i 10 -x 2 2>&1 |
        awk '/^[0-9]+ /{printf "%s:%s ", $1, $2}')
      name=new; [[ $b == "$base" ]] && name=base
      echo "$rep $bench $name $r"
    done
  done
done
echo "# end $(date -u +%FT%TZ) | load $(cut -d' ' -f1-3 /proc/loadavg)"
