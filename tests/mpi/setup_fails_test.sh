#!/usr/bin/env bash
# MCCL cannot be set up on one rank only (rank 1 names an interface that
# does not exist): every rank must learn it in the same call, leave every
# call to MPI, and the program (mpi_txbytes on lo) must still pass. The
# setup error is agreed, so it is reported once (by rank 0), naming rank 1
# and its reason.
#
#   setup_fails_test.sh FLAVOUR LIBRARY MPI_TXBYTES [PROGRESS]
#
# PROGRESS (inline|thread|offload) is the ranks' MCCL_PROGRESS; without it
# libmccl_mpi's default. Under offload the bad interface must reach the
# daemon that sets rank 1 up, whichever rank started it.
#
# The script is also the ranks' wrapper (first argument --rank-wrapper), so
# that LD_PRELOAD reaches the program only and rank 1 alone gets the bad
# MCCL_UDP_IFACE. Exit codes are run_mpi.sh's.
set -uo pipefail

if [[ ${1:-} == --rank-wrapper ]]; then
  shift
  rank=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-}}
  [[ $rank == 1 ]] && export MCCL_UDP_IFACE=nosuch0
  exec env LD_PRELOAD="$MCCL_TEST_PRELOAD" "$@"
fi
if [[ $# -ne 3 && $# -ne 4 ]]; then
  echo "usage: setup_fails_test.sh openmpi|mpich LIBRARY MPI_TXBYTES [inline|thread|offload]" >&2
  exit 2
fi
flavour=$1 lib=$2 app=$3 progress_env=""
[[ -z ${4:-} ]] || progress_env=" MCCL_PROGRESS=$4 MCCL_OFFLOAD_LOG=/dev/null"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=$(mktemp "${TMPDIR:-/tmp}/mccl-setup-fails.XXXXXX")
trap 'rm -f "$out"' EXIT

rc=0
RUN_MPI_ENV="MCCL_TEST_PRELOAD=$lib MCCL_MPI_STATS=1 MCCL_MPI_SINGLE_HOST=1 MCCL_MPI_MIN_BYTES=8192$progress_env" "$here/run_mpi.sh" "$flavour" 3 60 \
  "$here/setup_fails_test.sh" --rank-wrapper "$app" 1000000 /sys/class/net/lo/statistics/tx_bytes \
  >"$out" 2>&1 || rc=$?
cat "$out"
((rc == 0)) || exit "$rc"
bad=0
grep -q "^mccl_mpi rank 0: warning: MCCL could not be set up on MPI_COMM_WORLD.* on rank(s) 1; rank 1: .*nosuch0" "$out" ||
  { echo "setup_fails_test.sh: FAIL: rank 0 did not report rank 1's failed setup"; bad=1; }
(($(grep -c "warning: MCCL could not be set up" "$out") == 1)) ||
  { echo "setup_fails_test.sh: FAIL: the failed setup was not reported exactly once"; bad=1; }
for r in 0 1 2; do
  grep -q "^mccl_mpi stats: rank=$r served=0 .* comms_failed=1 " "$out" ||
    { echo "setup_fails_test.sh: FAIL: rank $r's statistics do not show every call left to MPI"; bad=1; }
done
((bad == 0)) && echo "setup_fails_test.sh: PASS: MCCL failed on rank 1 only; every rank fell back to MPI"
exit "$bad"
