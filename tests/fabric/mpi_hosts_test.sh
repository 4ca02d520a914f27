#!/usr/bin/env bash
# mpi_hosts_test.sh — libmccl_mpi with several ranks per host: 2 hosts of a
# namespace cluster (cluster.sh, 1gbit TBF both ways, MTU 1500), Open MPI
# (launch.sh --mpirun --ranks), MPI itself over TCP (inside a host over the
# namespace's loopback). mpi_app (tests/mpi) runs with and without
# LD_PRELOAD=LIBRARY under each MCCL_MPI_HIERARCHY scheme (flat, leaders,
# and auto, which builds both):
#   4 ranks, cyclic placement (hosts {0,2} and {1,3}: a host's ranks are not
#     consecutive, and broadcasts from ranks 2 and 3 have roots that are not
#     their host's leader);
#   3 ranks, block placement (hosts {0,1} and {2}: uneven).
# Checks, per case: every run prints RESULT: PASS; every rank's digest
# equals the plain run's (byte-exact results in rank order); every rank
# served calls; multicast went out from every rank under flat and auto (its
# nonblocking calls are served flat) and only from the leaders (ranks 0 and
# 1 cyclic, 0 and 2 block) under leaders; under auto, MPI_Allgather was
# served through the leaders and MPI_Iallgather flat (MCCL_MPI_DEBUG).
#
#   mpi_hosts_test.sh LIBRARY MPI_APP
#
# Exit: 0 pass, 1 a check failed, 2 usage, 77 not root / tools or Open MPI
# missing (CTest skip). Makes its own cluster (unique name), always torn down.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LAUNCH=$HERE/launch.sh
readonly HOSTS=2

[[ $# -eq 2 ]] || { echo "usage: mpi_hosts_test.sh LIBRARY MPI_APP" >&2; exit 2; }
LIB=$1 APP=$2
skip() { echo "mpi_hosts_test: SKIP: $*"; exit 77; }
command -v mpirun.openmpi >/dev/null || skip "mpirun.openmpi is not installed"
[[ $(id -u) -eq 0 ]] || skip "must run as root (network namespaces)"
for f in "$LIB" "$APP"; do [[ -e $f ]] || { echo "mpi_hosts_test: FAIL: $f does not exist"; exit 1; }; done


failed=0
fail() { echo "mpi_hosts_test: FAIL: $*"; failed=1; }

# shellcheck source=tests/fabric/own_cluster.sh
source "$HERE/own_cluster.sh"
own_cluster mpi_hosts_test mh "$HOSTS" --rate 1gbit --rate-side both --mtu 1500

# run OUT RANKS PLACEMENT SCHEME(plain|flat|leaders|auto): the launcher's status.
# Multicast from 8 KiB, whatever the algorithm table says (a team of 2 leaders
# never multicasts by the table): the checks below are about which ranks send it.
run() {
  local out=$1 ranks=$2 placement=$3 scheme=$4
  local -a pre=()
  [[ $scheme == plain ]] || pre=(env "LD_PRELOAD=$LIB" "MCCL_MPI_HIERARCHY=$scheme" MCCL_MPI_DEBUG=1 MCCL_MPI_MIN_BYTES=8192
    MCCL_COLL_BCAST_MCAST_FROM_BYTES=8192 MCCL_COLL_ALLGATHER_MCAST_FROM_BYTES=8192)
  "$LAUNCH" --mpirun --name "$NAME" --hosts "$HOSTS" --ranks "$ranks" --placement "$placement" \
    --timeout 180 --env MCCL_MPI_STATS=1 -- "${pre[@]}" "$APP" --iters 2 >"$out" 2>&1
}
digests() { grep -o 'rank [0-9]* digest [0-9a-f]*' "$1" | sort; }
field() { # field FILE RANK KEY: KEY=value of the line "mccl_mpi stats: rank=RANK ..."
  grep -o "mccl_mpi stats: rank=$2 .*" "$1" | head -1 | grep -o " $3=[0-9]*" | cut -d= -f2
}

# case RANKS PLACEMENT LEADERS...
check_case() {
  local ranks=$1 placement=$2
  shift 2
  local leaders=" $* " tag="n${ranks}_$placement" scheme r served mcast
  run "$TMP/$tag.plain" "$ranks" "$placement" plain || fail "$tag: mpi_app without the preload ($?)"
  for scheme in flat leaders auto; do
    local out=$TMP/$tag.$scheme
    run "$out" "$ranks" "$placement" "$scheme" || fail "$tag: mpi_app under $scheme ($?)"
    grep -q 'RESULT: PASS' "$out" || fail "$tag.$scheme: no RESULT: PASS"
    if [[ $(digests "$TMP/$tag.plain" | wc -l) -ne $ranks ]] ||
      ! diff <(digests "$TMP/$tag.plain") <(digests "$out") >/dev/null; then
      fail "$tag: results under $scheme differ from MPI's (or a rank printed no digest)"
    fi
    for ((r = 0; r < ranks; r++)); do
      served=$(field "$out" "$r" served)
      mcast=$(field "$out" "$r" mcast_bytes_sent)
      if [[ -z $served ]] || ((served == 0)); then
        fail "$tag.$scheme rank $r: MCCL served ${served:-no} calls"
      elif [[ $scheme != leaders || $leaders == *" $r "* ]]; then
        ((mcast > 0)) || fail "$tag.$scheme rank $r: sent no multicast"
      elif ((mcast != 0)); then
        fail "$tag.$scheme rank $r is no host's leader but sent $mcast multicast bytes"
      fi
    done
    if [[ $scheme == auto ]]; then
      grep -q "MPI_Allgather on MPI_COMM_WORLD.*served by MCCL among the hosts' leaders" "$out" ||
        fail "$tag.auto: MPI_Allgather was not served through the leaders"
      grep -q "MPI_Iallgather on MPI_COMM_WORLD.*served by MCCL (" "$out" ||
        fail "$tag.auto: MPI_Iallgather was not served flat"
    fi
    ((failed)) && cat "$out"
  done
  grep -q 'RESULT: PASS' "$TMP/$tag.plain" || fail "$tag.plain: no RESULT: PASS"
  echo "mpi_hosts_test: $tag: $(digests "$TMP/$tag.plain" | paste -sd' ')"
}

check_case 4 cyclic 0 1
check_case 3 block 0 2

if ((failed)); then
  echo "mpi_hosts_test: FAIL"
  exit 1
fi
echo "mpi_hosts_test: PASS: mpi_app byte-exact under flat, leaders and auto, 4 ranks cyclic and 3 ranks block on $HOSTS hosts"
