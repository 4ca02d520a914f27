#!/usr/bin/env bash
# Runs an MPI program under libmccl_mpi (MCCL_MPI_SINGLE_HOST=1,
# MCCL_MPI_STATS=1) with tests/mpi/run_mpi.sh, and passes when the program
# passes its own checks and every rank's statistics show calls served by
# MCCL and exactly FAILED served calls that ended in an MPI error (those the
# program provokes on purpose).
#
#   served_test.sh FLAVOUR RANKS SECONDS LIBRARY FAILED PROGRAM [ARGS...]
#
# SERVED_TEST_ENV="K=V ..." adds variables for every rank (MCCL_PROGRESS,
# say). Exit codes are run_mpi.sh's (77: launcher or program's runtime
# missing).
set -uo pipefail

if [[ $# -lt 6 ]]; then
  echo "usage: served_test.sh FLAVOUR RANKS SECONDS LIBRARY FAILED PROGRAM [ARGS...]" >&2
  exit 2
fi
flavour=$1 ranks=$2 seconds=$3 lib=$4 want_failed=$5
shift 5
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[[ -f $lib ]] || { echo "served_test.sh: FAIL: no library at $lib" >&2; exit 1; }
fail() { echo "served_test.sh: FAIL: $*"; exit 1; }

log=$(mktemp "${TMPDIR:-/tmp}/mccl-served.XXXXXX")
trap 'rm -f "$log"' EXIT
rc=0
RUN_MPI_ENV="LD_PRELOAD=$lib MCCL_MPI_SINGLE_HOST=1 MCCL_MPI_STATS=1 ${SERVED_TEST_ENV:-}" \
  "$here/run_mpi.sh" "$flavour" "$ranks" "$seconds" "$@" >"$log" 2>&1 || rc=$?
cat "$log"
((rc == 0)) || exit "$rc"
for ((r = 0; r < ranks; r++)); do
  line=$(grep "^mccl_mpi stats: rank=$r " "$log" | head -1)
  [[ -n $line ]] || fail "rank $r printed no statistics (MCCL_MPI_STATS=1)"
  served=$(grep -o ' served=[0-9]*' <<<"$line" | cut -d= -f2)
  failed=$(grep -o ' failed=[0-9]*' <<<"$line" | cut -d= -f2)
  ((served > 0)) || fail "rank $r: MCCL served no call"
  ((failed == want_failed)) || fail "rank $r: $failed served calls failed, expected $want_failed"
done
echo "served_test.sh: PASS: every rank's calls served by MCCL, $want_failed failed as provoked"
