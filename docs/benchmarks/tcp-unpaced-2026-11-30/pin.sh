#!/bin/sh
# pin.sh PROG ARGS...: runs on CPU = this rank (MCCL_RANK or OMPI_COMM_WORLD_RANK), or on PIN_CPU
r=${MCCL_RANK:-${OMPI_COMM_WORLD_RANK:-0}}
exec taskset -c "${PIN_CPU:-$r}" "$@"
