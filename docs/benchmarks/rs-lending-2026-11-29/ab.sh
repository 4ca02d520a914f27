#!/bin/bash
# Base against new on loopback (mccl_run): the reduce-scatter and the
# allreduce at 4 to 32 MiB, 2 ranks under the inline and thread engines and
# 4 ranks under the thread engine, launches alternating (the order reversed
# every repetition). One line per launch:
#   rep bench ranks engine build size_MiB:avg_us ...
# Usage: ab.sh BASE_BUILD NEW_BUILD REPS > ab.txt
base=$1 new=$2 reps=${3:-5}
echo "# $(grep -m1 'model name' /proc/cpuinfo) | $(date -u +%FT%TZ) | load $(cut -d' ' -f1-3 /proc/loadavg)"
for rep in $(seq "$reps"); do
  for bench in reduce_scatter allreduce; do
    for case in 2:inline 2:thread 4:thread; do
      ranks=${case%%:*} engine=${case##*:}
      order="$base $new"; ((rep % 2 == 0)) && order="$new $base"
      for b in $order; do
        r=$(MCCL_PROGRESS=$engine timeout 200 "$b/tools/mccl_run" -n "$ranks" -t 180 \
          "$b/bench/osu/mccl_osu_$bench" -m 4194304:33554432 -i 10 -x 2 2>&1 |
          awk '/^[0-9]+ /{printf "%d:%s ", $1 / 1048576, $2}')
        name=new; [[ $b == "$base" ]] && name=base
        echo "$rep $bench $ranks $engine $name $r"
      done
    done
  done
done
echo "# end $(date -u +%FT%TZ) | load $(cut -d' ' -f1-3 /proc/loadavg)"
