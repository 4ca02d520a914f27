#!/usr/bin/env bash
# setup_fail_test.sh — creating a communicator fails fast and on every rank
# when the network cannot carry it, with no MCCL_UDP_IFACE set (the ranks
# find veth0 themselves). 3 hosts, mp_worker txbytes launched by launch.sh:
#   1. control: no rule; every rank succeeds.
#   2. mesh: host 2 drops every incoming TCP connection request (nftables),
#      so ranks 0 and 1 cannot reach its repair port: every rank must fail
#      with an MCCL error naming rank 2 within LIMIT s (the setup timeout,
#      MCCL_TRANSPORT_SETUP_TIMEOUT_MS = 5 s, plus start-up), not after the
#      60 s collective timeout.
#   3. multicast: host 2 drops all multicast it receives: every rank must
#      fail within LIMIT s, naming rank 2 as hearing nothing from the others.
#
#   setup_fail_test.sh MP_WORKER
#
# Exit: 0 pass, 1 fail, 2 usage, 77 not root / tools missing (CTest skip).
# Makes its own cluster (unique name) and always tears it down.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CLUSTER=$HERE/cluster.sh
LAUNCH=$HERE/launch.sh
readonly HOSTS=3 LIMIT=20

[[ $# -eq 1 ]] || { echo "usage: setup_fail_test.sh MP_WORKER" >&2; exit 2; }
WORKER=$1
skip() { echo "setup_fail_test: SKIP: $*"; exit 77; }
[[ $(id -u) -eq 0 ]] || skip "must run as root (network namespaces)"
command -v nft >/dev/null || skip "nft is not installed"
[[ -x $WORKER ]] || { echo "setup_fail_test: FAIL: $WORKER is not executable"; exit 1; }

# shellcheck source=tests/fabric/own_cluster.sh
source "$HERE/own_cluster.sh"
own_cluster setup_fail_test sf "$HOSTS"

failed=0
fail() { echo "setup_fail_test: FAIL: $*"; failed=1; }

# run OUT: every rank runs mp_worker txbytes under a shell that reports its
# exit status and seconds, and exits 0 itself, so that launch.sh lets every
# rank finish instead of killing the others when the first one fails.
run() {
  # shellcheck disable=SC2016  # expanded by the ranks' shell
  "$LAUNCH" --name "$NAME" --hosts "$HOSTS" --timeout 90 -- bash -c \
    's=$EPOCHREALTIME; "$0" txbytes 65536; rc=$?; e=$EPOCHREALTIME
     echo "done rc=$rc secs=$(awk -v a="$s" -v b="$e" "BEGIN { printf \"%.1f\", b - a }")"' \
    "$WORKER" >"$1" 2>&1 || fail "launch.sh exit $? (${1##*/})"
}

# expect_failure OUT WHAT PATTERN: every rank failed, in time, naming PATTERN.
expect_failure() {
  local out=$1 what=$2 pattern=$3 r line secs
  for ((r = 0; r < HOSTS; r++)); do
    line=$(grep "^\[h$r\] done rc=" "$out")
    secs=${line##*secs=}
    [[ $line == *"rc=3 "* ]] || fail "$what: rank $r did not end with an MCCL error ($line)"
    awk -v s="${secs:-999}" -v l="$LIMIT" 'BEGIN { exit !(s < l) }' ||
      fail "$what: rank $r took ${secs:-?} s, not under $LIMIT s"
    grep "^\[h$r\] error " "$out" | grep -Eq "$pattern" ||
      fail "$what: rank $r's error does not match /$pattern/"
    echo "$what: rank $r failed after $secs s: $(grep -m1 "^\[h$r\] error " "$out" | cut -c1-240)"
  done
}

# 1. Control.
run "$TMP/ok"
for ((r = 0; r < HOSTS; r++)); do
  grep -q "^\[h$r\] done rc=0 " "$TMP/ok" || fail "control: rank $r did not succeed"
done
((failed)) && cat "$TMP/ok"

# 2. Host 2 refuses connections: the TCP mesh cannot form.
ip netns exec "$NAME-h2" nft -f - <<'NFT' || fail "nft: cannot add the TCP rule"
table ip mccl_setup_fail {
  chain input {
    type filter hook input priority 0;
    tcp flags & (syn | ack) == syn drop
  }
}
NFT
run "$TMP/mesh"
expect_failure "$TMP/mesh" mesh 'TCP reliable mesh.*rank\(s\) [0-9, ]*2.*rank 2 at 10\.201\.0\.3:'
((failed)) && cat "$TMP/mesh"
ip netns exec "$NAME-h2" nft delete table ip mccl_setup_fail || fail "nft: cannot remove the TCP rule"

# 3. Host 2 hears no multicast.
"$CLUSTER" loss --name "$NAME" --host 2 --percent 100 --port any || fail "cluster.sh loss"
run "$TMP/mcast"
expect_failure "$TMP/mcast" multicast 'rank 2 heard nothing from rank\(s\) 0,1'
((failed)) && cat "$TMP/mcast"

if ((failed)); then
  echo "setup_fail_test: FAIL"
  exit 1
fi
echo "setup_fail_test: PASS: a broken mesh and a deaf host fail every rank within $LIMIT s"
