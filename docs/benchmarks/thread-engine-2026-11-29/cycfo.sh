#!/bin/bash
# cycfo.sh N BENCH SIZE ITERS: Open MPI default cycle_us on cluster "cy"
n=$1; b=$2; s=$3; it=$4
f=$(mktemp -p /tmp); chmod 666 $f
timeout 300 /work/main/tests/fabric/launch.sh --mpirun --name cy --hosts $n --timeout 250 -- /tmp/cyc_lo/bin/mpi_coll_bench -b $b -m $s:$s -i $it -x $((it/10)) --json $f --impl ompi-default >/dev/null 2>&1
python3 -c "import json; r=json.loads(open('$f').readline()); print(r['cycle_us'])" 2>/dev/null || echo NaN; rm -f $f
