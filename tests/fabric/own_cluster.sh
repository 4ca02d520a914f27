# shellcheck shell=bash
# Sourced by the fabric test scripts that build one cluster of their own
# (mpi_fabric_test.sh, mpi_hosts_test.sh, setup_fail_test.sh); the sourcing
# script sets HERE (this directory).
#
# own_cluster PROG PREFIX HOSTS [cluster.sh up options...]: sets NAME
# (PREFIX, the pid and a random number: unique, and short enough for the
# interface names cluster.sh derives from it) and TMP (a scratch
# directory), tears both down on exit or signal, and brings the cluster up.
# Exits 77 (CTest's skip) where cluster.sh cannot build a cluster, 1 where
# it fails otherwise.
own_cluster() {
  local prog=$1 prefix=$2 hosts=$3 rc=0
  shift 3
  NAME="$prefix$(($$ % 100000))$((RANDOM % 100))"
  TMP=$(mktemp -d "${TMPDIR:-/tmp}/mccl-$prog.XXXXXX")
  trap own_cluster_down EXIT
  trap 'exit 130' INT TERM HUP
  "$HERE/cluster.sh" up --name "$NAME" --hosts "$hosts" "$@" || rc=$?
  if ((rc == 77)); then
    echo "$prog: SKIP: cluster.sh cannot build a cluster here"
    exit 77
  fi
  if ((rc != 0)); then
    echo "$prog: FAIL: cluster.sh up ($rc)"
    exit 1
  fi
}

own_cluster_down() {
  "$HERE/cluster.sh" down --name "$NAME" >/dev/null 2>&1 || true
  rm -rf "$TMP"
}
