#!/usr/bin/env bash
# mccl_fabric_test.sh — MCCL across a namespace cluster (cluster.sh + launch.sh):
# one process per "host", multicast replicated by the bridge, 1gbit TBF links
# both ways, MTU 1500, nftables loss on the receiving hosts.
#
#   mccl_fabric_test.sh --worker MP_WORKER sweep --hosts N --loss 0|1|10
#       mp_worker sweep (broadcast from every root, allgather, allgatherv,
#       0 B .. 1 MiB, byte-checked) under both progress engines. Loss 1: every
#       host drops 1% of the multicast it receives; loss 10: hosts 1 and 3 drop
#       10%. Checks the drops really happened and were repaired.
#   mccl_fabric_test.sh --worker MP_WORKER txbytes
#       What each rank put on its link (veth0 tx_bytes) for one 4 x 4 MiB
#       allgather and one 16 MiB broadcast from rank 0, on 4 hosts: every rank
#       at most 1.10 m (+ control) for the allgather, far below the ring's
#       (N-1) m; the broadcast root at most 1.10 m, the others only control.
#       Checked with patient loss deadlines (MCCL_PROTO_FIRST_TIMEOUT_US=200000,
#       MCCL_PROTO_STALL_MIN_US=20000), then with the defaults: the same bounds.
#       Then a 16 MiB allreduce (int32 sum): reduce-scatter + multicast allgather
#       puts at most 1.10 S (+ control, + any repairs served) on each link, at
#       most 0.8 of the ring allreduce's 2 (N-1)/N S; the ring allreduce (MCCL_COLL_ALLREDUCE_ALGO=ring)
#       is measured too, as the reference: at least 0.95 of 2 (N-1)/N S.
#   mccl_fabric_test.sh --worker MP_WORKER [--reduce-worker REDUCE_WORKER] reduce [--reliable tcp|ucx]
#       4 hosts, every host drops 1% of the multicast it receives: reduce_worker
#       (tests/mp; default: next to MP_WORKER) runs reduce_scatter and allreduce
#       under every algorithm, every datatype, counts 0 .. 100003, and the FSDP
#       overlap (also on two communicators sharing one progress thread), all
#       checked exactly; first with TCP, then with UCX (UCX_TLS=tcp; MCCL
#       hands UCX the interface it chose) as the reliable transport, or only
#       the one --reliable names. Checks that nftables dropped datagrams and
#       that ranks requested repairs.
#   mccl_fabric_test.sh --worker MP_WORKER kill
#       4 hosts; a rank exits in the middle of a 4 x 4 MiB allgather (rank 2
#       with the inline engine, rank 0, which also serves the bootstrap store,
#       with the thread engine): every survivor must fail with kPeerFailure well
#       within MCCL_COLL_TIMEOUT_MS (20 s). Then rank 1 stays alive but stops
#       answering (MCCL_COLL_TIMEOUT_MS=4000), under the inline engine (silent
#       mid-allgather) and the thread engine (its progress thread finishes the
#       allgather; it never joins the next barrier): the others must fail by the
#       deadline, not hang. Prints every survivor's error time.
#   mccl_fabric_test.sh --worker MP_WORKER noise
#       5 hosts; ranks on hosts 0-3 run broadcasts and allgather(v) (mp_worker
#       noise) while noise.py on host 4 sprays their multicast group (read from
#       the MCCL info log) with random bytes, truncated headers, well-formed
#       datagrams of a foreign tag, and datagrams with the right tag but a bad
#       field, a bad CRC or a far sequence number, plus replays of real ones.
#       Every rank must stay byte-exact and count the garbage as invalid. Runs
#       with MCCL_PROTO_AUTH=off: noise.py checks that it computes the CRC the
#       ranks do, which authenticated datagrams do not carry (forgeries against
#       the MAC: udp_auth_test).
#   mccl_fabric_test.sh --worker MP_WORKER congestion
#       2 hosts; while mp_worker reuse runs, `ss -ti` in host 0 reads the
#       congestion control of every connection of the reliable transport to
#       host 1: with MCCL_TCP_CONGESTION unset (auto) none may pace (cubic or
#       reno, whatever the hosts' default), with system each must run the
#       hosts' default (transport/tcp/congestion.h).
#
# Each run makes its own cluster (unique name) and always tears it down.
# Exit: 0 all checks passed, 1 a check failed, 77 not root / tools missing
# (CTest skip), 2 usage. The last line is "N passed, N failed".
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CLUSTER=$HERE/cluster.sh
LAUNCH=$HERE/launch.sh
NOISE=$HERE/noise.py

usage() { sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; }
usage_die() { echo "mccl_fabric_test: $*" >&2; echo "run '$0 --help' for usage" >&2; exit 2; }
# fd 3: the terminal's stdout, also while a check's own output goes to a file.
exec 3>&1
skip() { echo "mccl_fabric_test: SKIP: $*" >&3; echo "${passed:-0} passed, ${failed:-0} failed" >&3; exit 77; }

WORKER="" REDUCE_WORKER=""
while (($#)); do
  case $1 in
    -h | --help) usage; exit 0 ;;
    --worker) WORKER=${2-}; shift 2 ;;
    --reduce-worker) REDUCE_WORKER=${2-}; shift 2 ;;
    *) break ;;
  esac
done
SUB=${1:-}
[[ -n $SUB ]] || usage_die "missing subcommand (sweep|txbytes|reduce|kill|noise|congestion)"
shift
HOSTS=4 LOSS=0 RELIABLE="tcp ucx"
while (($#)); do
  case $1 in
    --hosts) HOSTS=${2-}; shift 2 ;;
    --loss) LOSS=${2-}; shift 2 ;;
    --reliable) RELIABLE=${2-}; shift 2 ;;
    *) usage_die "unknown argument '$1'" ;;
  esac
done
case $SUB in sweep | txbytes | reduce | kill | noise | congestion) ;; *) usage_die "unknown subcommand '$SUB'" ;; esac
if ! [[ $HOSTS =~ ^[0-9]+$ ]] || ((HOSTS < 2 || HOSTS > 32)); then usage_die "bad --hosts '$HOSTS'"; fi
[[ $LOSS == 0 || $LOSS == 1 || $LOSS == 10 ]] || usage_die "--loss must be 0, 1 or 10"
[[ $RELIABLE == "tcp ucx" || $RELIABLE == tcp || $RELIABLE == ucx ]] || usage_die "--reliable must be tcp or ucx"
[[ -n $WORKER ]] || usage_die "--worker MP_WORKER is required"
[[ -n $REDUCE_WORKER ]] || REDUCE_WORKER=$(dirname "$WORKER")/reduce_worker

[[ $(id -u) -eq 0 ]] || skip "must run as root (network namespaces)"
missing=()
for t in ip tc nft python3 setsid pgrep awk; do
  command -v "$t" >/dev/null 2>&1 || missing+=("$t")
done
((${#missing[@]} == 0)) || skip "missing tools: ${missing[*]} (apt-get install iproute2 nftables python3 procps util-linux)"
((BASH_VERSINFO[0] > 5 || (BASH_VERSINFO[0] == 5 && BASH_VERSINFO[1] >= 1))) || skip "needs bash >= 5.1"
PY=$(python3 -c 'import sys; print(sys.executable)') || skip "python3 does not run"

# Unique per run; short, since interface names are <NAME>s<i> (15 characters at most).
# Never one whose namespaces exist: the EXIT trap deletes the cluster NAME.
for _ in 1 2 3 4 5 6 7 8 9 10; do
  NAME="f${SUB:0:1}$(($$ % 100000))$((RANDOM % 100))"
  [[ -n $("$CLUSTER" list --name "$NAME" 2>/dev/null) ]] || break
done
TMP=$(mktemp -d "${TMPDIR:-/tmp}/mccl-fabric-$SUB.XXXXXX")
BG_PIDS=()

cleanup() {
  local p
  for p in "${BG_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  # Kills whatever still runs inside the cluster's namespaces, then deletes them.
  "$CLUSTER" down --name "$NAME" >/dev/null 2>&1 || true
  for p in "${BG_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

CHECK_VERBOSE=${FABRIC_TEST_VERBOSE:-}
# shellcheck source=checks.sh
source "$HERE/checks.sh"
elapsed_since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }'; }
# Figures meant for the reader go to fd 3.

finish() {
  echo "total $(now)s"
  echo "$passed passed, $failed failed"
  if ((failed == 0)); then exit 0; fi
  exit 1
}

up() { # up HOSTS [cluster.sh options...]
  local n=$1 rc=0
  shift
  "$CLUSTER" up --name "$NAME" --hosts "$n" --rate 1gbit --rate-side both --mtu 1500 "$@" || rc=$?
  if ((rc == 77)); then skip "cluster.sh cannot build a cluster here"; fi
  return "$rc"
}

# run_ranks OUT HOSTS [launch.sh options...] -- args...: mp_worker on hosts 0..HOSTS-1;
# output in OUT, launch.sh's status returned.
run_ranks() {
  local out=$1 n=$2 rc=0
  shift 2
  local -a opts=()
  while (($#)) && [[ $1 != -- ]]; do opts+=("$1"); shift; done
  shift
  # MCCL_OFFLOAD_JOB: under the offload engine the daemons' sockets carry the
  # cluster's name, so `cluster.sh down` removes what the final kill leaves.
  "$LAUNCH" --name "$NAME" --hosts "$n" --env MCCL_OFFLOAD_JOB="$NAME" "${opts[@]}" \
    -- "$WORKER" "$@" >"$out" 2>&1 || rc=$?
  return "$rc"
}

# field FILE PREFIX RANK KEY: value of KEY=... on the line "[hRANK] PREFIX ..." of FILE.
field() {
  awk -v p="[h$3] $2 " -v k="$4" 'index($0, p) == 1 {
      for (i = 1; i <= NF; i++) if (index($i, k "=") == 1) { print substr($i, length(k) + 2); exit } }' "$1"
}

# datagram_drops N: packets lost on the way to a receiver anywhere in the
# cluster: the hosts' kernels dropping them for a full receive buffer (Udp
# RcvbufErrors, per namespace) plus every qdisc drop (the rate limiters on
# hosts and switch ports), summed over hosts 0..N-1 and the switch. Both count
# socket buffers, not datagrams: with UDP GSO one buffer is a whole segmented
# send (up to 64 KiB of datagrams) until it leaves the cluster, and with GRO a
# receive buffer is a coalesced run.
datagram_drops() {
  local i sum=0 v ns
  for ((i = 0; i < $1; i++)); do
    v=$(ip netns exec "$NAME-h$i" awk '$1 == "Udp:" && $2 ~ /^[0-9]+$/ { print $6 }' /proc/net/snmp)
    sum=$((sum + ${v:-0}))
  done
  for ns in $("$CLUSTER" list --name "$NAME"); do
    v=$(ip netns exec "$ns" tc -s qdisc show |
      awk '{ for (i = 1; i < NF; i++) if ($i == "(dropped") { sub(",", "", $(i + 1)); d += $(i + 1) } } END { print d + 0 }')
    sum=$((sum + ${v:-0}))
  done
  echo "$sum"
}

[[ -x $WORKER ]] || { bad "mp_worker not found or not executable: $WORKER"; finish; }

# Random loss of 1% hits only a few wire packets per run (GRO/GSO carry up to
# 64 KiB each), so now and then it drops nothing, or only a creation-time probe
# that is retried rather than repaired. Such a run proves nothing about repairs:
# loss_hit_data returns $MISSED for it, and with_loss_hitting_data runs again.
MISSED=10
loss_hit_data() { # DROPS REPAIRS
  (($1 > 0 && $2 > 0)) && return 0
  echo "the random loss hit no data this run (nft_drops=$1 repairs_requested=$2)"
  return "$MISSED"
}

with_loss_hitting_data() { # FUNCTION ARGS...: up to 3 runs, each byte-exact
  local attempt rc
  for attempt in 1 2 3; do
    rc=0
    "$@" || rc=$?
    ((rc == MISSED)) || return "$rc"
  done
  echo "3 runs with loss configured, and not one needed a repair"
  return 1
}


# ------------------------------------------------------------------------ sweep

t_sweep_up() {
  local -a loss=() h
  case $LOSS in
    1) for ((h = 0; h < HOSTS; h++)); do loss+=(--loss-host "$h" --loss-percent 1 --loss-port any); done ;;
    10) loss=(--loss-host 1 --loss-percent 10 --loss-port any --loss-host 3 --loss-percent 10 --loss-port any) ;;
  esac
  up "$HOSTS" "${loss[@]}"
}

t_sweep_run() { # PROGRESS
  local progress=$1 out=$TMP/sweep.$1 rc=0 t0 r
  local before after
  before=$("$CLUSTER" drops --name "$NAME")
  t0=$EPOCHREALTIME
  run_ranks "$out" "$HOSTS" --timeout 150 --env MCCL_PROGRESS="$progress" \
    --env MCCL_COLL_TIMEOUT_MS=30000 -- sweep || rc=$?
  local secs
  secs=$(elapsed_since "$t0")
  after=$("$CLUSTER" drops --name "$NAME")
  cat "$out"
  ((rc == 0)) || { echo "launch.sh exit $rc (2 = wrong data, 3 = MCCL error, 124 = timeout)"; return 1; }
  local repairs=0 drops=0 v
  for ((r = 0; r < HOSTS; r++)); do
    v=$(field "$out" stats "$r" repairs_requested)
    [[ -n $v ]] || { echo "no stats line from rank $r"; return 1; }
    repairs=$((repairs + v))
  done
  drops=$(paste <(echo "$before") <(echo "$after") | awk '{ d += $5 - $2 } END { print d + 0 }')
  echo "sweep hosts=$HOSTS loss=$LOSS progress=$progress seconds=$secs nft_drops=$drops repairs_requested=$repairs" >&3
  ((LOSS == 0)) || loss_hit_data "$drops" "$repairs"
}

sweep_main() {
  local desc="loss none"
  ((LOSS == 1)) && desc="every host drops 1% of multicast"
  ((LOSS == 10)) && desc="hosts 1 and 3 drop 10% of multicast"
  check "up: $HOSTS hosts, 1gbit both ways, MTU 1500, $desc" t_sweep_up
  ((failed == 0)) || finish
  check "sweep byte-exact on $HOSTS hosts ($desc), inline progress" with_loss_hitting_data t_sweep_run inline
  check "sweep byte-exact on $HOSTS hosts ($desc), thread progress" with_loss_hitting_data t_sweep_run thread
  check "sweep byte-exact on $HOSTS hosts ($desc), offload progress" with_loss_hitting_data t_sweep_run offload
  finish
}

# ------------------------------------------------------------------------ txbytes

readonly MIB=1048576
readonly CONTROL_SLACK=65536 # control messages, TCP ACKs, IGMP: far below this
# The most datagram bytes one dropped packet can hold: a UDP GSO send (or GRO
# run) of up to 65507 payload bytes, with its 28-byte headers per datagram.
readonly GSO_DROP_BYTES=67584

# txbytes_check OUT MODE M N ROOT [ALGO]: the per-rank figures, and the bounds.
# The ring's figure per rank: (N-1) m for allgather and broadcast, 2 (N-1)/N S
# for an allreduce of S bytes. ALGO (allreduce only): rs_mcast or ring.
txbytes_check() {
  local out=$1 mode=$2 m=$3 n=$4 root=$5 algo=${6:-} r bytes barrier net repairs secs bad=0
  local ring=$(((n - 1) * m))
  [[ $mode != txbytes-allreduce ]] || ring=$((2 * (n - 1) * m / n))
  printf '%-14s %4s %12s %8s %8s %10s %8s %8s\n' "$mode" rank tx_bytes "tx/m" "tx/ring" barrier served seconds >&3
  # Repairs should answer real drops only: a rate limiter's queue overflowing,
  # or a receiver starved of CPU overrunning its socket buffer. Each drop is
  # one packet the kernel counts, which under GSO or GRO carries up to
  # GSO_DROP_BYTES of datagrams (a loaded run once lost 587 datagrams in 17
  # counted drops, 34.5 each), so up to that many bytes served per drop are
  # loss, not algorithm, and are taken out of the bounds below. A receiver
  # starved of CPU for longer than the loss deadlines may also ask for data
  # still queued in a rate limiter (it arrives twice): up to 2% of m of such
  # repairs is tolerated; a stream sent twice (100%) is not.
  local overruns=${TX_OVERRUNS:-0} served_total=0 excusable served_bytes
  for ((r = 0; r < n; r++)); do
    served_bytes=$(field "$out" counters "$r" repair_bytes_served)
    served_total=$((served_total + ${served_bytes:-0}))
  done
  excusable=$((overruns * GSO_DROP_BYTES + m / 50))
  echo "packets dropped (qdiscs, receive buffers): $overruns; repair bytes served: $served_total" >&3
  if ((served_total > excusable)); then
    echo "ranks served $served_total repair bytes for $overruns dropped packets (at most $excusable = drops x $GSO_DROP_BYTES + 2% of m): data sent twice"
    bad=1
  fi
  for ((r = 0; r < n; r++)); do
    bytes=$(field "$out" "$mode" "$r" bytes)
    barrier=$(field "$out" "$mode" "$r" barrier)
    secs=$(field "$out" "$mode" "$r" seconds)
    repairs=$(field "$out" counters "$r" repairs_served)
    [[ -n $bytes && -n $barrier ]] || { echo "no $mode line from rank $r"; bad=1; continue; }
    awk -v mo="$mode" -v r="$r" -v b="$bytes" -v m="$m" -v g="$ring" -v br="$barrier" -v rp="$repairs" -v s="$secs" \
      'BEGIN { printf "%-14s %4d %12d %8.4f %8.4f %10d %8d %8s\n", mo, r, b, b / m, b / g, br, rp, s }' >&3
    served_bytes=$(field "$out" counters "$r" repair_bytes_served)
    net=$((bytes - barrier))
    [[ $algo == ring ]] || net=$((net - ${served_bytes:-0}))
    if [[ $mode == txbytes-allreduce && $algo == ring ]]; then
      # The reference: the counters must see the ring's own traffic.
      if ((net * 100 < ring * 95)); then
        echo "rank $r: the ring allreduce injected only $net bytes net, below 0.95 x $ring"
        bad=1
      fi
    elif [[ $mode == txbytes-allreduce ]]; then
      # (N-1)/N S of reduce-scatter over TCP, S/N of multicast plus headers.
      if ((net * 100 > m * 110 + CONTROL_SLACK * 100)); then
        echo "rank $r injected $bytes bytes (barrier $barrier, repairs $served_bytes): more than 1.10 x $m + $CONTROL_SLACK"
        bad=1
      fi
      if ((net * 10 > ring * 8)); then
        echo "rank $r injected $bytes bytes (repairs $served_bytes): more than 0.8 of the ring allreduce's $ring"
        bad=1
      fi
    elif [[ $mode == txbytes || $r == "$root" ]]; then
      # 1.10 m: the data plus headers (82 of every 1514 bytes at MTU 1500 is 5.7%)
      if ((net * 100 > m * 110 + CONTROL_SLACK * 100)); then
        echo "rank $r injected $bytes bytes (barrier $barrier): more than 1.10 x $m + $CONTROL_SLACK"
        bad=1
      fi
      if ((bytes * 2 > ring)); then
        echo "rank $r injected $bytes bytes: not far below the ring's (N-1) m = $ring"
        bad=1
      fi
    elif ((net > CONTROL_SLACK)); then
      echo "rank $r (not the root) injected $bytes bytes (barrier $barrier): more than control traffic"
      bad=1
    fi
  done
  return "$bad"
}

# Loss deadlines far above any scheduler pause on 2 cores shared by 4 busy
# ranks: the figures without any loss-detection noise, to compare the
# default-settings run against.
readonly PATIENT=(--env MCCL_PROTO_FIRST_TIMEOUT_US=200000 --env MCCL_PROTO_STALL_MIN_US=20000)

t_txbytes() { # allgather|bcast [launch.sh --env K=V]...
  local what=$1 out=$TMP/tx.$RANDOM rc=0 m mode root desc
  shift
  local algo="" ring_desc overruns
  overruns=$(datagram_drops 4)
  if [[ $what == allgather ]]; then
    m=$((4 * MIB)) mode=txbytes root=-1 desc="allgather 4 x 4 MiB"
    run_ranks "$out" 4 --timeout 60 "$@" -- txbytes "$m" || rc=$?
  elif [[ $what == allreduce-* ]]; then
    algo=${what#allreduce-}
    m=$((16 * MIB)) mode=txbytes-allreduce root=-1 desc="allreduce 16 MiB ($algo)"
    run_ranks "$out" 4 --timeout 60 --env MCCL_COLL_ALLREDUCE_ALGO="$algo" "$@" \
      -- txbytes-allreduce "$m" || rc=$?
  else
    m=$((16 * MIB)) mode=txbytes-bcast root=0 desc="broadcast 16 MiB from rank 0"
    run_ranks "$out" 4 --timeout 60 "$@" -- txbytes-bcast "$m" 0 || rc=$?
  fi
  cat "$out"
  ((rc == 0)) || { echo "launch.sh exit $rc (2 = wrong data)"; return 1; }
  local settings
  settings=$(printf '%s\n' "$@" | grep -v '^--env$' | paste -sd' ')
  overruns=$(($(datagram_drops 4) - overruns))
  ring_desc="(N-1) m = $((3 * m))"
  [[ $mode != txbytes-allreduce ]] || ring_desc="2 (N-1)/N S = $((3 * m / 2))"
  echo "$desc, ${settings:-default settings}: bytes each rank put on its link (ring: $ring_desc per rank)" >&3
  TX_OVERRUNS=$overruns txbytes_check "$out" "$mode" "$m" 4 "$root" "$algo"
}

txbytes_main() {
  check "up: 4 hosts, 1gbit both ways, MTU 1500, no loss" up 4
  ((failed == 0)) || finish
  check "allgather 4 x 4 MiB (patient loss deadlines): every rank injects <= 1.10 m, far below (N-1) m" \
    t_txbytes allgather "${PATIENT[@]}"
  check "broadcast 16 MiB (patient loss deadlines): root injects <= 1.10 m, the others control only" \
    t_txbytes bcast "${PATIENT[@]}"
  check "allgather 4 x 4 MiB (default settings): the same bounds" t_txbytes allgather
  check "broadcast 16 MiB (default settings): the same bounds" t_txbytes bcast
  check "allreduce 16 MiB, reduce-scatter + multicast allgather: every rank injects <= 1.10 S, <= 0.8 of the ring's" \
    t_txbytes allreduce-rs_mcast
  check "allreduce 16 MiB, ring (the reference): every rank injects about 2 (N-1)/N S" \
    t_txbytes allreduce-ring
  finish
}

# ------------------------------------------------------------------------ reduce

t_reduce_up() {
  local -a loss=() h
  for ((h = 0; h < 4; h++)); do loss+=(--loss-host "$h" --loss-percent 1 --loss-port any); done
  up 4 "${loss[@]}"
}

t_reduce_run() { # tcp|ucx
  local reliable=$1 out=$TMP/reduce.$1 rc=0 t0 secs before after r v repairs=0 drops
  local -a env=(--env MCCL_PROGRESS=inline --env MCCL_COLL_TIMEOUT_MS=30000)
  [[ $reliable == tcp ]] || env+=(--env MCCL_RELIABLE=ucx --env UCX_TLS=tcp)
  before=$("$CLUSTER" drops --name "$NAME")
  t0=$EPOCHREALTIME
  "$LAUNCH" --name "$NAME" --hosts 4 --timeout 200 "${env[@]}" -- "$REDUCE_WORKER" >"$out" 2>&1 || rc=$?
  secs=$(elapsed_since "$t0")
  after=$("$CLUSTER" drops --name "$NAME")
  cat "$out"
  ((rc == 0)) || { echo "launch.sh exit $rc (2 = wrong data, 3 = MCCL error, 124 = timeout)"; return 1; }
  for ((r = 0; r < 4; r++)); do
    grep -q "^\[h$r\] reduce rank=$r ok" "$out" || { echo "rank $r did not finish"; return 1; }
    while read -r v; do repairs=$((repairs + v)); done < <(sed -n "s/^\[h$r\] reduce rank=$r algo=.* repairs_requested=\([0-9]*\).*/\1/p" "$out")
  done
  drops=$(paste <(echo "$before") <(echo "$after") | awk '{ d += $5 - $2 } END { print d + 0 }')
  echo "reduce hosts=4 loss=1% reliable=$reliable seconds=$secs nft_drops=$drops repairs_requested=$repairs" >&3
  loss_hit_data "$drops" "$repairs"
}

reduce_main() {
  [[ -x $REDUCE_WORKER ]] || { bad "reduce_worker not found or not executable: $REDUCE_WORKER"; finish; }
  check "up: 4 hosts, 1gbit both ways, MTU 1500, every host drops 1% of multicast" t_reduce_up
  ((failed == 0)) || finish
  if [[ $RELIABLE == *tcp* ]]; then
    check "reduce_scatter / allreduce (every algorithm, type, count 0..100003) exact, TCP repairs" \
      with_loss_hitting_data t_reduce_run tcp
  fi
  if [[ $RELIABLE == *ucx* ]]; then
    check "reduce_scatter / allreduce (every algorithm, type, count 0..100003) exact, UCX as the reliable transport" \
      with_loss_hitting_data t_reduce_run ucx
  fi
  finish
}

# ------------------------------------------------------------------------ kill

# t_kill MODE VICTIM PROGRESS TIMEOUT_MS: survivors exit 0 (the expected error)
# and report their error time, which must be below the limit.
t_kill() {
  local mode=$1 victim=$2 progress=$3 tmo=$4 out=$TMP/kill.$1.$2 rc=0 r t limit_ms
  run_ranks "$out" 4 --timeout 60 --env MCCL_PROGRESS="$progress" --env MCCL_COLL_TIMEOUT_MS="$tmo" \
    -- "$mode" "$victim" || rc=$?
  cat "$out"
  ((rc == 0)) || { echo "launch.sh exit $rc (4 = wrong error code, 5 = no error, 124 = hang)"; return 1; }
  # die: found through the closed connections, long before the deadline.
  # hang: only the deadline can find it; allow 3 s for the abort flood and exit.
  if [[ $mode == die ]]; then limit_ms=$tmo; else limit_ms=$((tmo + 3000)); fi
  local times=""
  for ((r = 0; r < 4; r++)); do
    ((r != victim)) || continue
    t=$(sed -n "s/^\[h$r\] rank $r failed after \([0-9.]*\) s with \([a-z ]*\):.*/\1 \2/p" "$out")
    [[ -n $t ]] || { echo "rank $r printed no error time"; return 1; }
    times+=" rank$r=${t%% *}s(${t#* })"
    awk -v s="${t%% *}" -v l="$limit_ms" 'BEGIN { exit !(s * 1000 < l) }' ||
      { echo "rank $r took ${t%% *} s, limit $limit_ms ms"; return 1; }
  done
  echo "$mode victim=$victim progress=$progress MCCL_COLL_TIMEOUT_MS=$tmo error times:$times" >&3
}

kill_main() {
  check "up: 4 hosts, 1gbit both ways, MTU 1500" up 4
  ((failed == 0)) || finish
  check "rank 2 exits mid-allgather (inline): survivors get kPeerFailure < 20 s" t_kill die 2 inline 20000
  check "rank 0 exits mid-allgather (thread): survivors get kPeerFailure < 20 s" t_kill die 0 thread 20000
  # Offload: the victim's daemon session sees its client vanish and fails
  # the victim's communicator, which the other daemons see as a dead peer.
  check "rank 2 exits mid-allgather (offload): survivors get kPeerFailure < 20 s" t_kill die 2 offload 20000
  # Inline: rank 1's allgather stops dead, the others time out inside it. Thread:
  # rank 1's progress thread still finishes the allgather, but rank 1 never
  # joins the barrier after it, where the others time out.
  check "rank 1 goes silent mid-allgather (inline): survivors fail by the 4 s deadline, no hang" \
    t_kill hang 1 inline 4000
  check "rank 1 stops calling collectives (thread): survivors fail by the 4 s deadline, no hang" \
    t_kill hang 1 thread 4000
  check "rank 1 stops calling collectives (offload): survivors fail by the 4 s deadline, no hang" \
    t_kill hang 1 offload 4000
  finish
}

# ------------------------------------------------------------------------ noise

readonly NOISE_ROUNDS=40

# noise_run OUT BLAST(0|1): ranks on hosts 0-3; with BLAST, noise.py on host 4.
noise_run() {
  local out=$1 blast=$2 go=$TMP/go.$RANDOM logdir=$TMP/logs.$RANDOM i tries launch_pid rc=0
  mkdir -p "$logdir"
  "$LAUNCH" --name "$NAME" --hosts 4 --timeout 120 --logdir "$logdir" --env MCCL_LOG_LEVEL=info \
    --env MCCL_COLL_TIMEOUT_MS=30000 --env MCCL_PROTO_AUTH=off -- "$WORKER" noise "$go" "$NOISE_ROUNDS" >"$out" 2>&1 &
  launch_pid=$!
  BG_PIDS+=("$launch_pid")
  # Every rank logs "udp transport (veth0, group A:P): ..." at info level and
  # then "noise rank=R waiting"; all must name the same group.
  for ((tries = 0; tries < 600; tries++)); do
    local ready=0
    for ((i = 0; i < 4; i++)); do
      grep -q "^noise rank=$i waiting" "$logdir/rank$i.log" 2>/dev/null && ready=$((ready + 1))
    done
    ((ready == 4)) && break
    kill -0 "$launch_pid" 2>/dev/null || break
    sleep 0.05
  done
  if ((ready != 4)); then
    wait "$launch_pid" || true
    cat "$out"
    echo "the ranks never got ready"
    return 1
  fi
  local groups
  groups=$(sed -n 's/.*udp transport (veth0, group \([0-9.]*:[0-9]*\)).*/\1/p' "$logdir"/rank[0-3].log | sort -u)
  if [[ $(wc -l <<<"$groups") != 1 || -z $groups ]]; then
    echo "ranks disagree on the group or did not log it: $groups"
    touch "$go"
    wait "$launch_pid" || true
    return 1
  fi
  NOISE_GROUP=$groups
  if ((blast)); then
    "$CLUSTER" exec --name "$NAME" --host 4 -- "$PY" "$NOISE" --group "${groups%:*}" --port "${groups#*:}" \
      --pps 50000 --duration 100 --stop-file "$TMP/stop" --ready "$TMP/noise.ready" >"$TMP/noise.out" 2>&1 &
    BG_PIDS+=("$!")
    local noise_pid=$!
    for ((tries = 0; tries < 200; tries++)); do [[ -e $TMP/noise.ready ]] && break; sleep 0.05; done
    [[ -e $TMP/noise.ready ]] || { echo "noise.py never got ready: $(cat "$TMP/noise.out")"; touch "$go"; wait "$launch_pid" || true; return 1; }
    sleep 0.3 # garbage before the first collective, too
  fi
  touch "$go"
  wait "$launch_pid" || rc=$?
  if ((blast)); then
    touch "$TMP/stop"
    wait "$noise_pid" || { echo "noise.py failed: $(cat "$TMP/noise.out")"; rc=1; }
  fi
  return "$rc"
}

t_noise_baseline() {
  local out=$TMP/noise.base rc=0 r
  noise_run "$out" 0 || rc=$?
  cat "$out"
  ((rc == 0)) || { echo "launch.sh exit $rc"; return 1; }
  local s="" inv bad=0
  for ((r = 0; r < 4; r++)); do
    inv=$(field "$out" counters "$r" invalid)
    s+=" rank$r=$(field "$out" noise "$r" seconds)s(invalid=$inv)"
    # Nothing foreign on the wire: nothing may be counted invalid.
    [[ $inv == 0 ]] || { echo "rank $r counted '$inv' invalid datagrams or messages without any stranger"; bad=1; }
  done
  echo "noise baseline (no foreign sender), group $NOISE_GROUP, $NOISE_ROUNDS rounds:$s" >&3
  return "$bad"
}

t_noise_blast() {
  local out=$TMP/noise.blast rc=0 r inv s=""
  noise_run "$out" 1 || rc=$?
  cat "$out"
  echo "--- noise.py:"
  cat "$TMP/noise.out"
  ((rc == 0)) || { echo "exit $rc (2 = wrong data, 3 = MCCL error, 124 = timeout)"; return 1; }
  local line sent replay checked crc_ok
  line=$(grep '^noise sent=' "$TMP/noise.out") || { echo "noise.py printed no summary"; return 1; }
  sent=$(sed -n 's/^noise sent=\([0-9]*\) .*/\1/p' <<<"$line")
  replay=$(sed -n 's/.* replay=\([0-9]*\) .*/\1/p' <<<"$line")
  checked=$(sed -n 's/.* crc_checked=\([0-9]*\) .*/\1/p' <<<"$line")
  crc_ok=$(sed -n 's/.* crc_ok=\([0-9]*\) .*/\1/p' <<<"$line")
  echo "foreign sender on h4 -> $NOISE_GROUP: $line" >&3
  ((sent > 0)) || { echo "noise.py sent nothing"; return 1; }
  # Our CRC32C agrees with MCCL's on every real datagram seen, so the
  # 'foreign' kind is well formed but for its tag.
  [[ $checked -gt 0 && $crc_ok == "$checked" ]] || { echo "checked $checked real datagrams, $crc_ok with a CRC we agree with"; return 1; }
  local bad=0
  for ((r = 0; r < 4; r++)); do
    inv=$(field "$out" counters "$r" invalid)
    s+=" rank$r: invalid=$inv stale=$(field "$out" counters "$r" stale) duplicate=$(field "$out" counters "$r" duplicate) seconds=$(field "$out" noise "$r" seconds)"$'\n'
    [[ -n $inv ]] || { echo "no counters line from rank $r"; bad=1; continue; }
    ((inv > 0)) || { echo "rank $r counted no invalid datagram"; bad=1; }
    # The receivers drop every datagram from an address that is not a
    # member's as invalid (UdpEndpoint::rejected), replays from the
    # stranger's address included: the bound is all the stranger sent.
    ((inv <= sent + replay)) || { echo "rank $r counted $inv invalid, more than the $((sent + replay)) datagrams the stranger sent ($sent garbage, $replay replays)"; bad=1; }
  done
  printf '%s' "$s" >&3
  return "$bad"
}

noise_main() {
  check "up: 5 hosts (ranks on 0-3, a stranger on 4), 1gbit both ways, MTU 1500" up 5
  ((failed == 0)) || finish
  check "noise mode without a foreign sender: byte-exact, nothing invalid" t_noise_baseline
  check "foreign sender sprays the group: byte-exact, garbage counted invalid on every rank" t_noise_blast
  finish
}

# ------------------------------------------------------------------------ congestion

readonly CONGESTION_PORT=24117 # the bootstrap store's, kept out of the reading

# congestion_seen SETTING: the congestion control of each connection between
# hosts 0 and 1 other than the bootstrap store's, one name a line, read by
# `ss -ti` in host 0 while the ranks run; empty when none was seen.
congestion_seen() {
  local setting=$1 pid i
  local -a env=()
  [[ $setting == auto ]] || env=(--env MCCL_TCP_CONGESTION="$setting")
  "$LAUNCH" --name "$NAME" --hosts 2 --port "$CONGESTION_PORT" --timeout 60 "${env[@]}" \
    -- "$WORKER" reuse 262144 150 >"$TMP/congestion-$setting.out" 2>&1 &
  pid=$!
  : >"$TMP/ss-$setting"
  for ((i = 0; i < 100; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    ip netns exec "$NAME-h0" ss -tin state established dst 10.201.0.2 >>"$TMP/ss-$setting" || true
    sleep 0.05
  done
  wait "$pid" || { cat "$TMP/congestion-$setting.out"; return 1; }
  # ss prints a connection's line, then its information: the algorithm's name first.
  awk -v p=":$CONGESTION_PORT" '$1 ~ /^[0-9]+$/ { skip = index($0, p) > 0; next }
    !skip && $1 ~ /^[a-z]+$/ && $2 ~ /^wscale:/ { print $1 }' "$TMP/ss-$setting" | sort -u
}

t_congestion() { # SETTING
  local setting=$1 default seen
  default=$(ip netns exec "$NAME-h0" sysctl -n net.ipv4.tcp_congestion_control)
  seen=$(congestion_seen "$setting") || return 1
  echo "hosts' default: $default; MCCL_TCP_CONGESTION=$setting: ${seen//$'\n'/ }" >&3
  [[ -n $seen ]] || { echo "no connection between the hosts was seen"; return 1; }
  if [[ $setting == auto ]]; then
    if grep -qv -x -e cubic -e reno <<<"$seen"; then
      echo "auto ran a congestion control that is neither cubic nor reno: $seen"
      return 1
    fi
  elif [[ $seen != "$default" ]]; then
    echo "system ran $seen, not the hosts' default $default"
    return 1
  fi
}

congestion_main() {
  check "up: 2 hosts, 1gbit both ways, MTU 1500" up 2
  ((failed == 0)) || finish
  check "auto: no connection between hosts paces" t_congestion auto
  check "system: every connection runs the hosts' default" t_congestion system
  finish
}

case $SUB in
  sweep) sweep_main ;;
  txbytes) txbytes_main ;;
  reduce) reduce_main ;;
  kill) kill_main ;;
  noise) noise_main ;;
  congestion) congestion_main ;;
esac
