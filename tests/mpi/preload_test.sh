#!/usr/bin/env bash
# Runs one unmodified MPI program (tests/mpi/mpi_app.c, built with mpicc)
# twice under one MPI implementation on this host: as it is, then with
# libmccl_mpi preloaded. Passes when
#   - both runs pass their own checks (every MPI_ result equals PMPI_'s),
#   - every rank's digest of all its results is the same in both runs,
#   - with the preload, every rank's statistics (MCCL_MPI_STATS=1) show calls
#     served by MCCL and bytes sent by multicast, no failed call and no
#     communicator where MCCL could not be set up,
#   - MCCL_MPI_DEBUG=1 logged both kinds of decision (served, and left to
#     MPI with a reason), each once, and the run without the preload printed
#     nothing of libmccl_mpi,
#   - a third run, with the preload under MPI_THREAD_MULTIPLE (mpi_app
#     --thread-multiple), gives the same results with exactly as many calls
#     served by MCCL as under MPI_THREAD_SERIALIZED.
#
#   preload_test.sh FLAVOUR RANKS SECONDS LIBRARY PROGRAM [ARGS...]
#
# FLAVOUR and the exit codes are run_mpi.sh's (77: launcher missing).
set -uo pipefail

if [[ $# -lt 5 ]]; then
  echo "usage: preload_test.sh openmpi|mpich RANKS SECONDS LIBRARY PROGRAM [ARGS...]" >&2
  exit 2
fi
flavour=$1 ranks=$2 seconds=$3 lib=$4
shift 4
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[[ -f $lib ]] || { echo "preload_test.sh: FAIL: no library at $lib" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/mccl-preload.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

fail() { echo "preload_test.sh: FAIL: $*"; exit 1; }

# 1. The program as it is.
rc=0
RUN_MPI_ENV="" "$here/run_mpi.sh" "$flavour" "$ranks" "$seconds" "$@" >"$tmp/plain" 2>&1 || rc=$?
sed 's/^/[plain] /' "$tmp/plain"
((rc == 77)) && exit 77
((rc == 0)) || fail "the run without libmccl_mpi failed ($rc)"
! grep -q 'mccl_mpi' "$tmp/plain" || fail "libmccl_mpi printed something although it was not preloaded"

# 2. The same program with libmccl_mpi preloaded.
rc=0
RUN_MPI_ENV="LD_PRELOAD=$lib MCCL_MPI_STATS=1 MCCL_MPI_DEBUG=1 MCCL_MPI_SINGLE_HOST=1 MCCL_MPI_MIN_BYTES=8192" \
  "$here/run_mpi.sh" "$flavour" "$ranks" "$seconds" "$@" >"$tmp/preload" 2>&1 || rc=$?
sed 's/^/[preload] /' "$tmp/preload"
((rc == 0)) || fail "the run with libmccl_mpi failed ($rc)"

# 3. Identical results on every rank.
digests() { grep -o 'rank [0-9]* digest [0-9a-f]*' "$1" | sort; }
[[ $(digests "$tmp/plain" | wc -l) -eq $ranks ]] || fail "the plain run printed $(digests "$tmp/plain" | wc -l) digests, not $ranks"
if ! diff <(digests "$tmp/plain") <(digests "$tmp/preload") >"$tmp/diff"; then
  cat "$tmp/diff"
  fail "results differ with libmccl_mpi preloaded"
fi

# 4. What went over multicast, per rank.
stat() { # stat RANK KEY
  grep "^mccl_mpi stats: rank=$1 " "$tmp/preload" | grep -o " $2=[0-9]*" | head -1 | cut -d= -f2
}
for ((r = 0; r < ranks; r++)); do
  served=$(stat "$r" served) mcast=$(stat "$r" mcast_bytes_sent)
  failed=$(stat "$r" failed) comms_failed=$(stat "$r" comms_failed) fallback=$(stat "$r" fallback)
  [[ -n $served ]] || fail "rank $r printed no statistics (MCCL_MPI_STATS=1)"
  ((served > 0)) || fail "rank $r: MCCL served no call"
  ((mcast > 0)) || fail "rank $r: nothing was sent by multicast"
  ((fallback > 0)) || fail "rank $r: no call was left to MPI (the program makes some that must be)"
  ((failed == 0)) || fail "rank $r: $failed served calls failed"
  ((comms_failed == 0)) || fail "rank $r: MCCL could not be set up on $comms_failed communicators"
  echo "preload_test.sh: rank $r: served=$served fallback=$fallback mcast_bytes_sent=$mcast"
done

# 5. The decisions were logged, with their reasons.
reasons=('served by MCCL' 'below MCCL_MPI_MIN_BYTES' 'no MCCL element type')
((ranks % 2 == 0)) || reasons+=('single-rank communicator') # the split's odd half is one rank
for reason in "${reasons[@]}"; do
  grep -q "$reason" "$tmp/preload" || fail "MCCL_MPI_DEBUG=1 never logged a decision '$reason'"
done
# ... each once per rank, communicator, call kind and reason.
dups=$(grep '^mccl_mpi rank [0-9]*: MPI_[A-Za-z_]* on ' "$tmp/preload" |
  sed 's/, [0-9]* bytes: /: /' | sort | uniq -d)
[[ -z $dups ]] || fail "MCCL_MPI_DEBUG=1 logged a decision more than once: $dups"
# 6. Under MPI_THREAD_MULTIPLE libmccl_mpi serves the same calls: the same
#    results, and on every rank as many calls served and left to MPI.
rc=0
RUN_MPI_ENV="LD_PRELOAD=$lib MCCL_MPI_STATS=1 MCCL_MPI_DEBUG=1 MCCL_MPI_SINGLE_HOST=1 MCCL_MPI_MIN_BYTES=8192" \
  "$here/run_mpi.sh" "$flavour" "$ranks" "$seconds" "$@" --thread-multiple >"$tmp/multiple" 2>&1 || rc=$?
sed 's/^/[multiple] /' "$tmp/multiple"
((rc == 0)) || fail "the run with MPI_THREAD_MULTIPLE failed ($rc)"
diff <(digests "$tmp/plain") <(digests "$tmp/multiple") >/dev/null ||
  fail "results differ under MPI_THREAD_MULTIPLE"
counts() { # counts FILE RANK: served/fallback per call kind
  grep "^mccl_mpi stats: rank=$2 " "$1" | grep -o ' MPI_[A-Za-z_]*=[0-9]*/[0-9]*' | sort
}
for ((r = 0; r < ranks; r++)); do
  [[ -n $(counts "$tmp/multiple" "$r") ]] || fail "rank $r printed no statistics under MPI_THREAD_MULTIPLE"
  diff <(counts "$tmp/preload" "$r") <(counts "$tmp/multiple" "$r") ||
    fail "rank $r: MCCL served other calls under MPI_THREAD_MULTIPLE than under MPI_THREAD_SERIALIZED"
done
grep -q 'MPI_THREAD_MULTIPLE' "$tmp/multiple" ||
  fail "MCCL_MPI_DEBUG=1 did not say that the program runs under MPI_THREAD_MULTIPLE"
echo "preload_test.sh: PASS: $ranks ranks under $flavour, identical results with and without $lib"
