#!/bin/bash
# Base against new, 2 ranks on loopback (mccl_run), every collective under
# the thread and offload engines at 4, 8 and 16 MiB, launches alternating
# (the order reversed every repetition). One line per launch:
#   rep bench engine build size:avg_us ...
# Usage: ab.sh BASE_BUILD NEW_BUILD REPS > ab.txt
base=$1 new=$2 reps=${3:-5}
echo "# $(grep -m1 'model name' /proc/cpuinfo) | $(date -u +%FT%TZ) | load $(cut -d' ' -f1-3 /proc/loadavg)"
no_daemon() { for _ in $(seq 50); do pgrep -f "mccl_offloadd --socket" >/dev/null || return 0; sleep 0.2; done; }
for rep in $(seq "$reps"); do
  for bench in allgather allreduce reduce_scatter bcast; do
    for engine in thread offload; do
      order="$base $new"; ((rep % 2 == 0)) && order="$new $base"
      for b in $order; do
        no_daemon
        r=$(MCCL_PROGRESS=$engine timeout 200 "$b/tools/mccl_run" -n 2 -t 180 \
          "$b/bench/osu/mccl_osu_$bench" -m 4194304:16777216 -i 20 -x 3 2>&1 |
          awk '/^[0-9]+ /{printf "%d:%s ", $1 / 1048576, $2}')
        name=new; [[ $b == "$base" ]] && name=base
        echo "$rep $bench $engine $name $r"
      done
    done
  done
done
echo "# end $(date -u +%FT%TZ) | load $(cut -d' ' -f1-3 /proc/loadavg)"
