#!/usr/bin/env bash
# selftest.sh — self-test of the namespace fabric (cluster.sh, launch.sh, netns-wrap.sh).
#
# Builds a 4-host cluster (1gbit both ways, MTU 1500) and checks: addresses, MTU and
# rate limiters; every host pings every other; UDP multicast reaches all joined hosts
# and no other; loss rules (one set at `up`, one added later) drop exactly what they
# should; `counters` shows the sent volume; launch.sh passes rank/env, fails fast,
# enforces its timeout and leaves nothing running; the --mpirun mode (when Open MPI is
# installed); a second cluster with MTU 9000 and an injection limit of 20mbit; and
# `down` leaves no namespace behind. Always tears down (trap EXIT).
#
# Exit: 0 all passed, 1 something failed, 77 not root / tools missing (CTest skip).
# The last line is "N passed, N failed".
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CLUSTER=$HERE/cluster.sh
LAUNCH=$HERE/launch.sh
MCAST=$HERE/mcast.py

skip() { echo "selftest: SKIP: $*" >&2; exit 77; }
[[ $(id -u) -eq 0 ]] || skip "must run as root (network namespaces)"
missing=()
for t in ip tc nft ping python3 pgrep ps setsid; do
  command -v "$t" >/dev/null 2>&1 || missing+=("$t")
done
((${#missing[@]} == 0)) ||
  skip "missing tools: ${missing[*]} (apt-get install iproute2 nftables iputils-ping python3 procps util-linux)"

# The interpreter itself, not a version-manager shim (those cost ~0.3 s per start).
PY=$(python3 -c 'import sys; print(sys.executable)') || skip "python3 does not run"
[[ -x $PY ]] || PY=$(command -v python3)

NAME="mf$$"      # unique per run; short: interface names are <NAME>s<i>
NAME2="mg$$"
HOSTS=4
GROUP=239.1.2.3
GROUP2=239.1.2.4
PORT_OK=5001     # no loss
PORT_UPLOSS=5002 # 100% loss on host 2, set by `up`
PORT_RTLOSS=5003 # 100% loss on host 3 for any UDP multicast port, added later (`loss`)
COUNT=200
SIZE=1000
MARK="mfmark$$x$RANDOM"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/mccl-fabric-selftest.XXXXXX")

cleanup() {
  "$CLUSTER" down --name "$NAME" >/dev/null 2>&1 || true
  "$CLUSTER" down --name "$NAME2" >/dev/null 2>&1 || true
  local pids
  pids=$(pgrep -f "$MARK" || true)
  # shellcheck disable=SC2086
  [[ -z $pids ]] || kill -KILL $pids 2>/dev/null || true
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

CHECK_VERBOSE=${FABRIC_SELFTEST_VERBOSE:-}
# shellcheck source=checks.sh
source "$HERE/checks.sh"
in_ns() { local h=$1; shift; "$CLUSTER" exec --name "$NAME" --host "$h" -- "$@"; }
counter() { # counter HOST COLUMN(2=tx_bytes 3=rx_bytes 4=tx_packets 5=rx_packets)
  "$CLUSTER" counters --name "$NAME" | awk -v h="h$1" -v c="$2" '$1 == h { print $c }'
}

# ------------------------------------------------------------------------ tests

t_up() {
  local rc=0
  "$CLUSTER" up --name "$NAME" --hosts "$HOSTS" --rate 1gbit --rate-side both --mtu 1500 \
    --loss-host 2 --loss-percent 100 --loss-port "$PORT_UPLOSS" || rc=$?
  if ((rc == 77)); then exit 77; fi
  return "$rc"
}

t_layout() {
  local i sw=$NAME-sw n
  n=$("$CLUSTER" list --name "$NAME" | wc -l)
  [[ $n == $((HOSTS + 1)) ]] || { echo "list shows $n namespaces"; return 1; }
  ip -n "$sw" -d link show br0 | grep -q 'mcast_snooping 1 .*mcast_querier 1' ||
    { echo "bridge snooping/querier not set"; return 1; }
  ip -n "$sw" -d link show br0 | grep -q 'mcast_query_response_interval 100' || return 1
  ip -n "$sw" -4 addr show dev br0 | grep -q 'inet 10.201.0.254/24' || { echo "bridge address"; return 1; }
  for ((i = 0; i < HOSTS; i++)); do
    ip -n "$NAME-h$i" -4 addr show dev veth0 | grep -q "inet 10.201.0.$((i + 1))/24" || { echo "h$i address"; return 1; }
    ip -n "$NAME-h$i" link show veth0 | grep -q 'mtu 1500 ' || { echo "h$i mtu"; return 1; }
    ip -n "$NAME-h$i" link show lo | grep -q 'UP' || { echo "h$i lo down"; return 1; }
    ip -n "$NAME-h$i" route show 224.0.0.0/4 | grep -q 'dev veth0' || { echo "h$i mcast route"; return 1; }
    ip -n "$sw" link show "${NAME}s$i" | grep -q 'mtu 1500 .*master br0' || { echo "port $i"; return 1; }
    tc -n "$NAME-h$i" qdisc show dev veth0 | grep -q 'tbf .*rate 1Gbit' || { echo "h$i no inject tbf"; return 1; }
    tc -n "$sw" qdisc show dev "${NAME}s$i" | grep -q 'tbf .*rate 1Gbit' || { echo "port $i no eject tbf"; return 1; }
  done
  ip -n "$sw" link show br0 | grep -q 'mtu 1500 ' || { echo "bridge mtu"; return 1; }
}

t_ping_all() {
  local i j bad=0
  for ((i = 0; i < HOSTS; i++)); do
    for ((j = 0; j < HOSTS; j++)); do
      ((i != j)) || continue
      in_ns "$i" ping -c1 -W1 -q "10.201.0.$((j + 1))" >/dev/null 2>&1 || { echo "h$i -> h$j failed"; bad=1; }
    done
  done
  return "$bad"
}

# mcast_round [-g GROUP] PORT RECEIVERS... : receivers join GROUP:PORT, host 0 sends
# COUNT datagrams; leaves "<host> <received>" lines in $TMP/round.out.
mcast_round() {
  local group=$GROUP
  if [[ $1 == -g ]]; then group=$2; shift 2; fi
  local port=$1 h pids=() tries
  shift
  rm -f "$TMP"/ready.* "$TMP"/recv.*
  for h in "$@"; do
    in_ns "$h" "$PY" "$MCAST" recv --group "$group" --port "$port" --count "$COUNT" \
      --timeout 2 --ready "$TMP/ready.$h" >"$TMP/recv.$h" 2>&1 &
    pids+=("$!")
  done
  for h in "$@"; do
    for ((tries = 0; tries < 200; tries++)); do
      [[ -e $TMP/ready.$h ]] && break
      sleep 0.05
    done
    [[ -e $TMP/ready.$h ]] || { echo "receiver on h$h never got ready: $(cat "$TMP/recv.$h")"; kill "${pids[@]}" 2>/dev/null; return 1; }
  done
  in_ns 0 "$PY" "$MCAST" send --group "$group" --port "$port" --count "$COUNT" --size "$SIZE" >"$TMP/send.out" 2>&1 ||
    { cat "$TMP/send.out"; return 1; }
  local rc=0
  for h in "${pids[@]}"; do wait "$h" || rc=1; done
  : >"$TMP/round.out"
  for h in "$@"; do
    echo "$h $(sed -n 's/^received=\([0-9]*\) .*/\1/p' "$TMP/recv.$h")" >>"$TMP/round.out"
  done
  return "$rc"
}
received() { awk -v h="$1" '$1 == h { print $2 }' "$TMP/round.out"; }

TX0_BEFORE="" TX0_AFTER=""
t_mcast_all() {
  local h bad=0
  TX0_BEFORE=$(counter 0 2)
  mcast_round "$PORT_OK" 1 2 3 || return 1
  TX0_AFTER=$(counter 0 2)
  cat "$TMP/round.out"
  for h in 1 2 3; do
    [[ $(received "$h") == "$COUNT" ]] || { echo "h$h received $(received "$h") of $COUNT"; bad=1; }
  done
  return "$bad"
}

t_snooping() {
  local before after
  # A group host 3 never joined (right after a leave the bridge keeps forwarding a
  # group to the port for last_member_count x last_member_interval = 2 s).
  before=$(counter 3 5)
  mcast_round -g "$GROUP2" "$PORT_OK" 1 2 || return 1
  after=$(counter 3 5)
  # A few IGMP queries may arrive; the COUNT datagrams must not.
  (((after - before) < 10)) || { echo "h3 (not joined) got $((after - before)) packets"; return 1; }
  [[ $(received 1) == "$COUNT" && $(received 2) == "$COUNT" ]] || { cat "$TMP/round.out"; return 1; }
}

t_counters() {
  local delta wire=$((COUNT * (SIZE + 8 + 20 + 14)))
  delta=$((TX0_AFTER - TX0_BEFORE))
  echo "h0 tx_bytes grew by $delta; $COUNT datagrams of $SIZE bytes are $wire bytes on the wire"
  ((delta >= wire && delta <= wire + 4096))
}

t_loss_at_up() {
  mcast_round "$PORT_UPLOSS" 1 2 3 || return 1
  cat "$TMP/round.out"
  [[ $(received 1) == "$COUNT" && $(received 3) == "$COUNT" && $(received 2) == 0 ]] || return 1
  local drops
  drops=$("$CLUSTER" drops --name "$NAME" | awk '$1 == "h2" { print $2 }')
  echo "h2 nft drops: $drops"
  [[ $drops == "$COUNT" ]]
}

t_loss_runtime_any() {
  "$CLUSTER" loss --name "$NAME" --host 3 --percent 100 --port any || return 1
  mcast_round "$PORT_RTLOSS" 1 2 3 || return 1
  cat "$TMP/round.out"
  [[ $(received 1) == "$COUNT" && $(received 2) == "$COUNT" && $(received 3) == 0 ]] || return 1
  "$CLUSTER" loss --name "$NAME" --host 3 --clear || return 1
  mcast_round "$PORT_RTLOSS" 3 || return 1
  [[ $(received 3) == "$COUNT" ]] || { echo "after --clear h3 got $(received 3)"; return 1; }
}

t_launch_env() {
  local out expect="" i
  # shellcheck disable=SC2016  # expanded by the ranks' shell
  out=$("$LAUNCH" --name "$NAME" --hosts "$HOSTS" --timeout 20 --env FOO=bar -- sh -c \
    'echo "$MCCL_RANK $MCCL_WORLD_SIZE $MCCL_BOOTSTRAP_ADDR ${MCCL_UDP_IFACE-unset} $FOO $(ip -4 -o addr show dev veth0 | awk "{print \$4}")"') ||
    { echo "launch failed: $out"; return 1; }
  printf '%s\n' "$out"
  for ((i = 0; i < HOSTS; i++)); do
    grep -Eq "^\[h$i\] $i $HOSTS 10\.201\.0\.1:[0-9]+ unset bar 10\.201\.0\.$((i + 1))/24\$" <<<"$out" ||
      { echo "rank $i line missing or wrong"; return 1; }
  done
  # The exact check from the brief: sh -c 'echo $MCCL_RANK' on 4 hosts collects 0..3.
  # shellcheck disable=SC2016
  out=$("$LAUNCH" --name "$NAME" --hosts "$HOSTS" -- sh -c 'echo $MCCL_RANK') || return 1
  for ((i = 0; i < HOSTS; i++)); do expect+="[h$i] $i"$'\n'; done
  [[ $out$'\n' == "$expect" ]] || { echo "got: $out"; return 1; }
}

t_launch_failfast() {
  local rc=0 t0 dt
  t0=$EPOCHREALTIME
  # shellcheck disable=SC2016
  "$LAUNCH" --name "$NAME" --hosts "$HOSTS" --timeout 60 -- bash -c \
    '[ "$MCCL_RANK" != 2 ] || { sleep 0.2; exit 3; }; exec -a "$0" sleep 30' "$MARK-ff" >/dev/null 2>&1 || rc=$?
  dt=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
  echo "exit $rc after ${dt}s"
  ((rc == 3)) || return 1
  awk -v d="$dt" 'BEGIN { exit !(d < 10) }' || return 1
  sleep 0.2
  ! pgrep -af "$MARK-ff"
}

t_launch_timeout() {
  local rc=0 t0 dt
  t0=$EPOCHREALTIME
  # Every rank leaves a child behind; rank 1 itself sleeps past the timeout.
  # shellcheck disable=SC2016
  "$LAUNCH" --name "$NAME" --hosts "$HOSTS" --timeout 2 -- bash -c \
    '(exec -a "$0-child" sleep 60) & [ "$MCCL_RANK" != 1 ] || exec -a "$0" sleep 60; echo done' \
    "$MARK-to" >"$TMP/to.out" 2>&1 || rc=$?
  dt=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
  echo "exit $rc after ${dt}s"
  cat "$TMP/to.out"
  ((rc == 124)) || return 1
  awk -v d="$dt" 'BEGIN { exit !(d >= 2 && d < 8) }' || return 1
  sleep 0.2
  ! pgrep -af "$MARK-to"
}

t_mpirun() {
  local out i t
  # shellcheck disable=SC2016
  out=$("$LAUNCH" --mpirun --name "$NAME" --hosts "$HOSTS" --timeout 60 -- sh -c \
    'echo "$OMPI_COMM_WORLD_RANK $OMPI_COMM_WORLD_SIZE $MCCL_BOOTSTRAP_ADDR ${MCCL_UDP_IFACE-unset} $(ip -4 -o addr show dev veth0 | awk "{print \$4}")"') ||
    { echo "$out"; return 1; }
  printf '%s\n' "$out"
  for ((i = 0; i < HOSTS; i++)); do
    grep -Eqx "\[h$i\] $i $HOSTS 10\.201\.0\.1:[0-9]+ unset 10\.201\.0\.$((i + 1))/24" <<<"$out" || { echo "rank $i wrong"; return 1; }
  done
  if ! command -v mpicc.openmpi >/dev/null 2>&1; then
    echo "(mpicc.openmpi missing: no MPI_Init / traffic check)"
    return 0
  fi
  # A real MPI program: MPI_Init must reach mpirun's PMIx server from inside the host
  # namespaces, and a 4 x 4 MiB allgather must cross the veths (no shared memory).
  cat >"$TMP/ag.c" <<'EOF'
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int r, n, ok = 1, cnt = 1 << 20;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  int *b = calloc((size_t)cnt * n, sizeof(int));
  for (int i = 0; i < cnt; i++) b[(size_t)r * cnt + i] = r;
  MPI_Allgather(MPI_IN_PLACE, 0, MPI_INT, b, cnt, MPI_INT, MPI_COMM_WORLD);
  for (int k = 0; k < n; k++) if (b[(size_t)k * cnt + cnt - 1] != k) ok = 0;
  printf("rank %d of %d ok=%d\n", r, n, ok);
  MPI_Finalize();
  return ok ? 0 : 1;
}
EOF
  mpicc.openmpi -O2 -o "$TMP/ag" "$TMP/ag.c" || return 1
  local before after
  before=$("$CLUSTER" counters --name "$NAME")
  out=$("$LAUNCH" --mpirun --name "$NAME" --hosts "$HOSTS" --timeout 60 -- "$TMP/ag") || { echo "$out"; return 1; }
  printf '%s\n' "$out"
  after=$("$CLUSTER" counters --name "$NAME")
  for ((i = 0; i < HOSTS; i++)); do
    grep -qx "\[h$i\] rank $i of $HOSTS ok=1" <<<"$out" || { echo "rank $i wrong"; return 1; }
    t=$(($(awk -v h="h$i" '$1 == h { print $2 }' <<<"$after") - $(awk -v h="h$i" '$1 == h { print $2 }' <<<"$before")))
    echo "h$i tx_bytes +$t"
    # ring allgather: each rank sends (N-1) x 4 MiB
    ((t >= (HOSTS - 1) * 4 * 1048576)) || { echo "h$i sent too little: traffic did not cross the veth"; return 1; }
  done
}

t_jumbo_inject() {
  "$CLUSTER" up --name "$NAME2" --hosts 2 --mtu 9000 --rate 20mbit --rate-side inject || return 1
  local sw=$NAME2-sw
  ip -n "$NAME2-h0" link show veth0 | grep -q 'mtu 9000 ' || { echo "h0 mtu"; return 1; }
  ip -n "$sw" link show "${NAME2}s0" | grep -q 'mtu 9000 ' || { echo "port mtu"; return 1; }
  ip -n "$sw" link show br0 | grep -q 'mtu 9000 ' || { echo "bridge mtu"; return 1; }
  tc -n "$NAME2-h0" qdisc show dev veth0 | grep -q 'tbf .*rate 20Mbit' || { echo "no inject tbf"; return 1; }
  ! tc -n "$sw" qdisc show dev "${NAME2}s0" | grep -q tbf || { echo "eject tbf present"; return 1; }
  "$CLUSTER" exec --name "$NAME2" --host 0 -- ping -c1 -W1 -q -M "do" -s 8972 10.201.0.2 >/dev/null ||
    { echo "jumbo ping failed"; return 1; }
  # 300 x 8000 bytes = 19.2 Mbit through a 20 Mbit/s limit: about a second.
  rm -f "$TMP/ready.j"
  "$CLUSTER" exec --name "$NAME2" --host 1 -- "$PY" "$MCAST" recv --port "$PORT_OK" --count 300 \
    --timeout 6 --ready "$TMP/ready.j" >"$TMP/recv.j" 2>&1 &
  local rp=$! tries
  for ((tries = 0; tries < 200; tries++)); do [[ -e $TMP/ready.j ]] && break; sleep 0.05; done
  "$CLUSTER" exec --name "$NAME2" --host 0 -- "$PY" "$MCAST" send --port "$PORT_OK" --count 300 --size 8000 >/dev/null ||
    return 1
  wait "$rp" || return 1
  cat "$TMP/recv.j"
  local n el
  n=$(sed -n 's/^received=\([0-9]*\) .*/\1/p' "$TMP/recv.j")
  el=$(sed -n 's/.* elapsed=\([0-9.]*\)$/\1/p' "$TMP/recv.j")
  [[ $n == 300 ]] || return 1
  awk -v e="$el" 'BEGIN { r = 300 * 8000 * 8 / e / 1e6; printf "measured %.1f Mbit/s\n", r; exit !(r > 10 && r < 30) }'
}

t_up_refuses_existing() {
  local rc=0
  "$CLUSTER" up --name "$NAME" --hosts 2 2>/dev/null || rc=$?
  ((rc != 0)) || { echo "up succeeded on an existing name"; return 1; }
  in_ns 0 ping -c1 -W1 -q 10.201.0.2 >/dev/null || { echo "existing cluster damaged"; return 1; }
}

t_down() {
  "$CLUSTER" down --name "$NAME" || return 1
  "$CLUSTER" down --name "$NAME2" || return 1
  "$CLUSTER" down --name "$NAME" || { echo "second down failed"; return 1; }
  local left
  left=$(ip netns list | awk '{print $1}' | grep -E "^($NAME|$NAME2)-" || true)
  [[ -z $left ]] || { echo "left behind: $left"; return 1; }
}

# ------------------------------------------------------------------------ run

check "up: 4 hosts, 1gbit both ways, MTU 1500, loss on h2" t_up
if ((failed == 0)); then
  check "layout: addresses, MTU, routes, bridge snooping, TBF both sides" t_layout
  check "ping: every host reaches every other" t_ping_all
  check "multicast: joined hosts receive all $COUNT datagrams" t_mcast_all
  check "multicast: snooping keeps a group off a host that did not join" t_snooping
  check "counters: h0 tx_bytes grew by the sent volume" t_counters
  check "loss set at up: h2 drops 100% on port $PORT_UPLOSS, h1/h3 receive all" t_loss_at_up
  check "loss added later (port any) on h3, then cleared" t_loss_runtime_any
  check "launch: rank, world size, bootstrap address, iface, --env, namespace" t_launch_env
  check "launch: a failing rank stops the others (exit code kept, nothing left)" t_launch_failfast
  check "launch: timeout gives 124 and leaves no process behind" t_launch_timeout
  if command -v mpirun.openmpi >/dev/null 2>&1; then
    check "launch --mpirun: ranks in their namespaces, MPI allgather over the veths" t_mpirun
  else
    echo "SKIP: launch --mpirun (Open MPI not installed: apt-get install openmpi-bin libopenmpi-dev)"
  fi
  check "second cluster: MTU 9000, 20mbit inject-only limit holds" t_jumbo_inject
  check "up refuses an existing name and leaves that cluster intact" t_up_refuses_existing
fi
check "down: removes every namespace, twice is fine" t_down

echo "total $(now)s"
echo "$passed passed, $failed failed"
((failed == 0))
