#!/usr/bin/env bash
# Runs an MPI test program under one MPI implementation's launcher on this
# host and judges the run.
#
#   run_mpi.sh FLAVOUR RANKS SECONDS PROGRAM [ARGS...]
#
# FLAVOUR
#   openmpi      mpirun.openmpi; MCCL finds the ranks through PMIx (no MCCL_* set)
#   openmpi-tcp  mpirun.openmpi with MCCL_BOOTSTRAP_ADDR: the TCP store
#   mpich        mpirun.mpich (hydra) with MCCL_BOOTSTRAP_ADDR: the TCP store
#
# Exit: 0 pass; 77 the launcher is not installed (CTest: skipped); 124 the
# run passed SECONDS; otherwise the launcher's exit code (1 when that was 0
# but the program never printed "RESULT: PASS").
#
# RUN_MPI_ENV="K=V ..." (space-separated) passes more variables to every
# rank (-x K=V, -genv K V), e.g. LD_PRELOAD for tests/mpi/preload_test.sh.
#
# The program prints "RESULT: PASS|FAIL" from rank 0 and "rank R finalizing"
# from every rank just before MPI_Finalize. They are looked for anywhere in
# a line: the launcher forwards each rank's output in pieces, so one rank's
# line may land in the middle of another's. MPICH 4.0.2 sometimes hangs in
# MPI_Finalize with 4 ranks after everything is done (FABRIC.md): when every
# rank has said "finalizing", RESULT is PASS and the launcher still runs
# FINALIZE_GRACE seconds later, the job is killed and, under MPICH, the run
# counts as passed with a note. Under Open MPI such a hang is not known and
# fails the run.
set -uo pipefail

if [[ $# -lt 4 ]]; then
  echo "usage: run_mpi.sh openmpi|openmpi-tcp|mpich RANKS SECONDS PROGRAM [ARGS...]" >&2
  exit 2
fi
flavour=$1 ranks=$2 seconds=$3
shift 3
finalize_grace=${FINALIZE_GRACE:-20}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' \
    2>/dev/null || echo $((20000 + RANDOM % 30000))
}

# Every rank gets only the MCCL_* variables this run chooses.
clean_env=(env -u MCCL_BOOTSTRAP_ADDR -u MCCL_RANK -u MCCL_WORLD_SIZE -u MCCL_TRANSPORT)
case $flavour in
  openmpi | openmpi-tcp)
    launcher=mpirun.openmpi
    # TCP on loopback only: no shared memory, no other interface.
    # shellcheck disable=SC2054  # "tcp,self" is one argument
    cmd=("$launcher" -n "$ranks" --oversubscribe --allow-run-as-root --bind-to none
      --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo)
    if [[ $flavour == openmpi-tcp ]]; then
      cmd+=(-x "MCCL_BOOTSTRAP_ADDR=127.0.0.1:$(free_port)")
    fi
    ;;
  mpich)
    launcher=mpirun.mpich
    cmd=("$launcher" -n "$ranks" -genv MCCL_BOOTSTRAP_ADDR "127.0.0.1:$(free_port)")
    ;;
  *)
    echo "run_mpi.sh: unknown flavour '$flavour'" >&2
    exit 2
    ;;
esac

for kv in ${RUN_MPI_ENV:-}; do
  [[ $kv == *=* ]] || { echo "run_mpi.sh: RUN_MPI_ENV entry '$kv' is not K=V" >&2; exit 2; }
  if [[ $launcher == mpirun.mpich ]]; then
    cmd+=(-genv "${kv%%=*}" "${kv#*=}")
  else
    cmd+=(-x "$kv")
  fi
done

if ! command -v "$launcher" >/dev/null 2>&1; then
  echo "run_mpi.sh: $launcher is not installed: skipped" \
    "(Debian: $([[ $flavour == mpich ]] && echo 'mpich libmpich-dev' || echo 'openmpi-bin libopenmpi-dev'))"
  exit 77
fi

log=$(mktemp "${TMPDIR:-/tmp}/mccl-mpi-$flavour.XXXXXX")
trap 'rm -f "$log"' EXIT
echo "run_mpi.sh: ${clean_env[*]} timeout $seconds ${cmd[*]} $*"
start=$SECONDS
"${clean_env[@]}" timeout -k 5 "$seconds" "${cmd[@]}" "$@" >"$log" 2>&1 &
pid=$!

# Watches for "everything printed, but the launcher does not exit".
done_at=
hung=0
while kill -0 "$pid" 2>/dev/null; do
  sleep 0.5
  if [[ -z $done_at ]] && grep -q 'RESULT: ' "$log" &&
    [[ $(grep -o 'rank [0-9]* finalizing' "$log" | wc -l) -ge $ranks ]]; then
    done_at=$SECONDS
  fi
  if [[ -n $done_at ]] && ((SECONDS - done_at >= finalize_grace)); then
    hung=1
    kill -TERM "$pid" 2>/dev/null  # timeout passes it on to the launcher
    break
  fi
done
wait "$pid"
rc=$?
cat "$log"
elapsed=$((SECONDS - start))

if [[ $hung -eq 1 ]]; then
  if grep -q 'RESULT: PASS' "$log" && [[ $flavour == mpich ]]; then
    echo "run_mpi.sh: PASS with a known MPI fault: every rank printed its results and reached" \
      "MPI_Finalize, then $launcher did not exit within ${finalize_grace} s (the MPICH 4.0.2" \
      "hang in MPI_Finalize, FABRIC.md); the job was killed (${elapsed} s)"
    exit 0
  fi
  echo "run_mpi.sh: FAIL: every rank reached MPI_Finalize but $launcher did not exit within" \
    "${finalize_grace} s (${elapsed} s)"
  exit 1
fi
if [[ $rc -eq 124 || $rc -eq 137 ]]; then
  echo "run_mpi.sh: FAIL: the run passed its deadline of $seconds s before every rank finished;" \
    "every process was killed"
  exit 124
fi
if [[ $rc -ne 0 ]]; then
  echo "run_mpi.sh: FAIL: $launcher exited with $rc after ${elapsed} s"
  exit "$rc"
fi
if ! grep -q 'RESULT: PASS' "$log"; then
  echo "run_mpi.sh: FAIL: $launcher exited with 0 but the program never printed RESULT: PASS"
  exit 1
fi
echo "run_mpi.sh: PASS in ${elapsed} s"
exit 0
