#!/usr/bin/env bash
# netns-wrap.sh — per-rank wrapper for MPI launchers: run the rank inside its host
# namespace of a cluster.sh cluster.
#
#   mpirun ... netns-wrap.sh NAME program args...
#
# The rank comes from OMPI_COMM_WORLD_RANK, PMI_RANK or PMIX_RANK (first set wins);
# the wrapper execs `ip netns exec NAME-h<host> program args...`, host = rank unless
# MCCL_FABRIC_HOSTS=N is set (several ranks per host; launch.sh --ranks): then
# MCCL_FABRIC_PLACEMENT=cyclic gives host rank mod N, block (the default)
# rank / ceil(SIZE/N), SIZE from OMPI_COMM_WORLD_SIZE, PMI_SIZE or PMIX_SIZE. When
# MCCL_FABRIC_LOG_DIR is set, the rank's stdout+stderr go to
# $MCCL_FABRIC_LOG_DIR/rank<rank>.log (launch.sh --mpirun uses this). Needs root.
set -euo pipefail

if (($# < 2)); then
  echo "usage: netns-wrap.sh NAME program args..." >&2
  exit 2
fi
name=$1
shift
rank=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-${PMIX_RANK:-}}}
if ! [[ $rank =~ ^[0-9]+$ ]]; then
  echo "netns-wrap.sh: no rank in OMPI_COMM_WORLD_RANK, PMI_RANK or PMIX_RANK" >&2
  exit 2
fi
if [[ -n ${MCCL_FABRIC_LOG_DIR:-} ]]; then
  exec >"$MCCL_FABRIC_LOG_DIR/rank$rank.log" 2>&1
fi
host=$rank
if [[ -n ${MCCL_FABRIC_HOSTS:-} ]]; then
  hosts=$MCCL_FABRIC_HOSTS
  size=${OMPI_COMM_WORLD_SIZE:-${PMI_SIZE:-${PMIX_SIZE:-$hosts}}}
  if [[ ${MCCL_FABRIC_PLACEMENT:-block} == cyclic ]]; then
    host=$((rank % hosts))
  else
    host=$((rank / ((size + hosts - 1) / hosts)))
  fi
fi
exec ip netns exec "$name-h$host" "$@"
