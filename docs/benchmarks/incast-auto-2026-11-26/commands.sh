#!/bin/bash
# One session, one binary: the auto incast budget against the old fixed 256 KiB.
set -u
cd /work/main
O=/tmp/incast-2026-11-26b
mkdir -p $O
run() { local name=$1; shift; echo "=== $name $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)"; bench/fabric/run.sh "$@" --out $O/$name --no-plots > $O/$name.log 2>&1; echo "rc=$? $(date -u +%T)"; }
run r4-1g-auto     --ranks 4 --rate 1gbit --impls mccl --sizes 2m,16m --benches allgather --scaling-ranks none --mccl-env MCCL_LOG_LEVEL=info
run r4-1g-256k     --ranks 4 --rate 1gbit --impls mccl --sizes 2m,16m --benches allgather --scaling-ranks none --mccl-env MCCL_PROTO_INCAST_BYTES=262144
run r4-1g-auto-2   --ranks 4 --rate 1gbit --impls mccl --sizes 2m,16m --benches allgather --scaling-ranks none
run r4-1g-256k-2   --ranks 4 --rate 1gbit --impls mccl --sizes 2m,16m --benches allgather --scaling-ranks none --mccl-env MCCL_PROTO_INCAST_BYTES=262144
run r8-1g-auto     --ranks 8 --rate 1gbit --impls mccl --sizes 2m --benches allgather --scaling-ranks none
run r8-1g-256k     --ranks 8 --rate 1gbit --impls mccl --sizes 2m --benches allgather --scaling-ranks none --mccl-env MCCL_PROTO_INCAST_BYTES=262144
run r4-10g-auto    --ranks 4 --rate 10gbit --impls mccl --sizes 2m,16m --benches allgather --scaling-ranks none
run r4-10g-256k    --ranks 4 --rate 10gbit --impls mccl --sizes 2m,16m --benches allgather --scaling-ranks none --mccl-env MCCL_PROTO_INCAST_BYTES=262144
run r32-100m-auto  --ranks 32 --rate 100mbit --impls mccl --sizes 256k --benches bcast,allgather --scaling-ranks 2,32 --scaling-size 256k --budget 2
echo DONE
