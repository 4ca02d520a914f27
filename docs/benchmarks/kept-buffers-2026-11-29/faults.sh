#!/bin/bash
# Page faults a second in the process that stages or sends a 2-rank 16 MiB
# allgather on loopback: the offload daemon, and one rank under the thread
# engine. perf stat over 1.5 s in the middle of a long run.
# Usage: faults.sh BUILD...
for b in "$@"; do
  for engine in offload thread; do
    MCCL_PROGRESS=$engine timeout 120 "$b/tools/mccl_run" -n 2 -t 100 "$b/bench/osu/mccl_osu_allgather" \
      -m 16777216:16777216 -i 2000 -x 3 >/dev/null 2>&1 &
    sleep 2
    if [[ $engine == offload ]]; then pid=$(pgrep -f "mccl_offloadd --socket" | head -1)
    else pid=$(pgrep -f mccl_osu_allgather | tail -1); fi
    echo "== $b $engine (pid $pid)"
    perf stat -e page-faults,task-clock -p "$pid" -- sleep 1.5 2>&1 | grep -E "page-faults|task-clock"
    pkill -f mccl_osu_allgather; wait
    for _ in $(seq 50); do pgrep -f "mccl_offloadd --socket" >/dev/null || break; sleep 0.2; done
  done
done
