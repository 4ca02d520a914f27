#!/usr/bin/env bash
# Where libmccl_mpi starts to serve each collective. Runs tests/mpi/mpi_sizes
# (MPI_Bcast, MPI_Allgather, MPI_Allreduce, MPI_Reduce_scatter_block at every
# power of two, smallest first, results checked) on RANKS ranks of this host
# under the preload with MCCL_MPI_DEBUG=1 (MCCL_MPI_SINGLE_HOST=1), twice:
#   1. MCCL_MPI_MIN_BYTES unset (auto): the communicator's creation line
#      names, per collective, the size from which MCCL serves; the first call
#      served by MCCL is at least that size and the call before it (half its
#      size) went to MPI as below MCCL_MPI_MIN_BYTES;
#   2. MCCL_MPI_MIN_BYTES=4096: the same with 4096 for every collective.
#
#   min_bytes_test.sh FLAVOUR RANKS LIBRARY MPI_SIZES
#
# Exit codes are run_mpi.sh's (77: launcher missing); 1 on a failed check.
set -uo pipefail

if [[ $# -ne 4 ]]; then
  echo "usage: min_bytes_test.sh FLAVOUR RANKS LIBRARY MPI_SIZES" >&2
  exit 2
fi
flavour=$1 ranks=$2 lib=$3 prog=$4
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
readonly MAX_BYTES=8388608
failed=0
fail() { echo "min_bytes_test.sh: FAIL: $*"; failed=1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mccl-min-bytes.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# check LOG SETTING: every collective's first served size against the
# threshold the creation line names.
check() {
  local log=$1 setting=$2 kind created threshold served below
  created=$(grep -m1 '^mccl_mpi rank 0: MCCL communicator created on MPI_COMM_WORLD' "$log")
  [[ -n $created ]] || { fail "$setting: rank 0 logged no creation line"; return; }
  for kind in MPI_Bcast MPI_Allgather MPI_Allreduce MPI_Reduce_scatter_block; do
    threshold=$(grep -o "$kind [0-9]* B" <<<"$created" | cut -d' ' -f2)
    served=$(grep -m1 "^mccl_mpi rank 0: $kind on MPI_COMM_WORLD .* bytes: served by MCCL" "$log" |
      sed 's/.*, \([0-9]*\) bytes: .*/\1/')
    below=$(grep "^mccl_mpi rank 0: $kind on MPI_COMM_WORLD .* bytes: MPI: below MCCL_MPI_MIN_BYTES" "$log")
    if [[ -z $threshold || -z $served ]]; then
      fail "$setting: $kind: threshold '${threshold}', first served size '${served}'"
      continue
    fi
    ((served >= threshold)) || fail "$setting: $kind served at $served B, below its threshold $threshold B"
    ((served / 2 < threshold)) ||
      fail "$setting: $kind first served at $served B, but $((served / 2)) B already reaches $threshold B"
    [[ -n $below ]] || fail "$setting: $kind: no call went to MPI as below MCCL_MPI_MIN_BYTES"
    echo "min_bytes_test.sh: $setting: $kind: MCCL from $threshold B, first served at $served B"
  done
}

for setting in auto 4096; do
  env=(LD_PRELOAD="$lib" MCCL_MPI_SINGLE_HOST=1 MCCL_MPI_DEBUG=1)
  [[ $setting != auto ]] && env+=(MCCL_MPI_MIN_BYTES="$setting")
  rc=0
  RUN_MPI_ENV="${env[*]}" "$here/run_mpi.sh" "$flavour" "$ranks" 120 "$prog" "$MAX_BYTES" \
    >"$tmp/$setting" 2>&1 || rc=$?
  ((rc == 77)) && { cat "$tmp/$setting"; exit 77; }
  ((rc == 0)) || { cat "$tmp/$setting"; fail "$setting: the run failed ($rc)"; continue; }
  grep -q "MCCL_MPI_MIN_BYTES=$setting" "$tmp/$setting" ||
    fail "$setting: MPI_Init's debug line does not say MCCL_MPI_MIN_BYTES=$setting"
  check "$tmp/$setting" "$setting"
  [[ $setting == 4096 ]] && ! grep -q "MPI_Bcast 4096 B, MPI_Allgather 4096 B, MPI_Allreduce 4096 B, MPI_Reduce_scatter_block 4096 B" "$tmp/$setting" &&
    fail "4096: the creation line does not name 4096 B for every collective"
done
((failed)) && exit 1
echo "min_bytes_test.sh: PASS"
