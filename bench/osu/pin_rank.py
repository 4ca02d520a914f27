#!/usr/bin/python3
"""pin_rank.py PROGRAM [ARGS...]: runs PROGRAM on one CPU, its rank modulo
the CPUs this process may use (the rank from MCCL_RANK, set by mccl_run, or
OMPI_COMM_WORLD_RANK, set by Open MPI's mpirun), for latency.sh --pin: both
implementations then run with the same placement, one rank per core as far
as the cores go, instead of wherever the scheduler puts them (Open MPI's
mpirun binds 2 ranks to a core each by default; mccl_run binds nothing)."""
import os
import sys

if len(sys.argv) < 2:
    sys.exit("usage: pin_rank.py PROGRAM [ARGS...]")
rank = int(os.environ.get("MCCL_RANK") or os.environ.get("OMPI_COMM_WORLD_RANK") or 0)
cpus = sorted(os.sched_getaffinity(0))
os.sched_setaffinity(0, {cpus[rank % len(cpus)]})
os.execvp(sys.argv[1], sys.argv[1:])
