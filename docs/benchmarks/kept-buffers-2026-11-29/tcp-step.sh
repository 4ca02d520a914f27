#!/bin/bash
# The step from 8 to 16 MiB in a 2-rank allgather over TCP on one host: Open
# MPI (ob1, tcp) beside MCCL's thread engine, its table's choice (Bruck) and
# multicast pinned; 3 launches of each, alternating. One line per launch:
#   impl size_mib:avg_us ...
# Usage: tcp-step.sh BUILD MPI_COLL_BENCH [REPS] (mpicc.openmpi -O2 bench/fabric/mpi_coll_bench.c)
b=$1 mpi=$2
echo "# $(grep -m1 'model name' /proc/cpuinfo) | $(date -u +%FT%TZ) | load $(cut -d' ' -f1-3 /proc/loadavg)"
fmt() { awk '/^[0-9]+ /{printf "%d:%s ", $1 / 1048576, $2}'; }
for rep in $(seq "${3:-3}"); do
  echo "ompi $(mpirun.openmpi --allow-run-as-root -n 2 --mca pml ob1 --mca btl tcp,self "$mpi" \
    -b allgather -m 2097152:33554432 -i 20 -x 3 2>&1 | fmt)"
  for algo in auto multicast; do
    echo "mccl-$algo $(MCCL_COLL_ALLGATHER_ALGO=$algo MCCL_PROGRESS=thread timeout 100 \
      "$b/tools/mccl_run" -n 2 -t 90 "$b/bench/osu/mccl_osu_allgather" -m 2097152:33554432 \
      -i 20 -x 3 2>&1 | fmt)"
  done
done
echo "# end $(date -u +%FT%TZ) | load $(cut -d' ' -f1-3 /proc/loadavg)"
