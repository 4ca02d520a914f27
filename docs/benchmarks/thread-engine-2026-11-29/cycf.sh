#!/bin/bash
# cycf.sh BUILD N BENCH SIZE ITERS [K=V ...]: cycle_us on cluster "cy"
B=$1; n=$2; b=$3; s=$4; it=$5; shift 5
envs=(); for kv in "$@"; do envs+=(--env "$kv"); done
f=$(mktemp -p /tmp); chmod 666 $f
timeout 300 /work/main/tests/fabric/launch.sh --name cy --hosts $n --timeout 250 "${envs[@]}" -- $B/bench/osu/mccl_osu_$b -m $s:$s -i $it -x $((it/10)) --json $f >/dev/null 2>&1
python3 -c "import json; r=json.loads(open('$f').readline()); print(r['cycle_us'])" 2>/dev/null || echo NaN; rm -f $f
