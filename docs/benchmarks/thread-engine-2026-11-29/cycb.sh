#!/bin/bash
# cycb.sh BUILD N BENCH SIZE ITERS [K=V...] : MCCL loopback cycle_us (and p50)
B=$1; n=$2; b=$3; s=$4; it=$5; shift 5
f=$(mktemp); env MCCL_UDP_IFACE=lo "$@" timeout 300 $B/tools/mccl_run -n $n $B/bench/osu/mccl_osu_$b -m $s:$s -i $it -x $((it/10)) --json $f >/dev/null 2>&1
python3 -c "import json,sys; r=json.loads(open('$f').readline()); print(r['cycle_us'])" 2>/dev/null || echo NaN; rm -f $f
