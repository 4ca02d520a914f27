#!/bin/bash
# small.sh HOSTS OUT: the six small cases, 9 alternating launches each of MCCL inline, thread and Open MPI
cd /work/main
export HOSTS=$1 MPI_BENCH=/tmp/mpi_coll_bench
o=$2
for c in "bcast 1 3000" "bcast 16384 2000" "bcast 65536 1000" "allgather 1 3000" "allgather 16384 2000" "allgather 65536 1000"; do
  set -- $c
  python3 docs/benchmarks/spin-crossover-2026-11-29/ab_env.py $o 9 $1 $2 $3 inline:MCCL_PROGRESS=inline thread:MCCL_PROGRESS=thread ompi
done
