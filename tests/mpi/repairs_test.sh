#!/usr/bin/env bash
# Repairs measure loss, nothing else: on this host's loopback, where no
# datagram is lost, 4 ranks of an unmodified MPI program (mpi_nbloop) make
# KIND (MPI_Ibcast or MPI_Iallgather, completed by MPI_Wait) of BYTES over
# and over through libmccl_mpi, and every rank must have asked for less
# than one message's worth of repairs in all (MCCL_MPI_STATS=1).
#
# Before the fix a rank sat spinning in MPI_Wait, starving the progress
# threads on the shared cores; a root that started a broadcast late was
# then taken for total loss, and whole messages (1 MiB each) were fetched a
# second time over the reliable transport, up to 6 MiB per rank in 20 calls.
#
#   repairs_test.sh FLAVOUR LIBRARY MPI_NBLOOP KIND BYTES ITERS
#
# Exit codes are run_mpi.sh's.
set -uo pipefail

if [[ $# -ne 6 ]]; then
  echo "usage: repairs_test.sh openmpi|mpich LIBRARY MPI_NBLOOP ibcast|iallgather BYTES ITERS" >&2
  exit 2
fi
flavour=$1 lib=$2 app=$3 kind=$4 bytes=$5 iters=$6
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=$(mktemp "${TMPDIR:-/tmp}/mccl-repairs.XXXXXX")
trap 'rm -f "$out"' EXIT

rc=0
RUN_MPI_ENV="LD_PRELOAD=$lib MCCL_MPI_STATS=1 MCCL_MPI_SINGLE_HOST=1 MCCL_MPI_MIN_BYTES=8192" \
  "$here/run_mpi.sh" "$flavour" 4 150 "$app" "$kind" "$bytes" "$iters" >"$out" 2>&1 || rc=$?
cat "$out"
((rc == 0)) || exit "$rc"
bound=$bytes
[[ $kind == iallgather ]] && bound=$((3 * bytes))
bad=0
for r in 0 1 2 3; do
  line=$(grep "^mccl_mpi stats: rank=$r " "$out")
  served=$(grep -o ' served_bytes=[0-9]*' <<<"$line" | cut -d= -f2)
  repairs=$(grep -o ' repair_bytes_requested=[0-9]*' <<<"$line" | cut -d= -f2)
  if [[ -z $served || -z $repairs ]] || ((served == 0)); then
    echo "repairs_test.sh: FAIL: rank $r printed no statistics or served nothing"
    bad=1
  elif ((repairs >= bound)); then
    echo "repairs_test.sh: FAIL: rank $r asked for $repairs bytes of repairs without any loss" \
      "(served $served bytes)"
    bad=1
  fi
done
((bad == 0)) && echo "repairs_test.sh: PASS: every rank asked for less than $bound bytes of repairs"
exit "$bad"
