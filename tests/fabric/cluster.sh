#!/usr/bin/env bash
# cluster.sh — build, use and tear down an N-host cluster of network namespaces
# joined by a bridge (the "switch") with IGMP snooping, optional TBF rate limits
# and optional nftables loss. Address plan and details: tests/fabric/README.md.
#
#   cluster.sh up       --name NAME --hosts N [--rate R] [--rate-side inject|eject|both]
#                       [--mtu 1500|9000] [--loss-host I --loss-percent P --loss-port PORT|any]...
#                       [--no-wait] [--rps [--rps-mask MASK]]
#   cluster.sh down     --name NAME
#   cluster.sh exec     --name NAME --host I|sw -- cmd...
#   cluster.sh counters --name NAME          # per host: hI tx_bytes rx_bytes tx_packets rx_packets
#   cluster.sh loss     --name NAME --host I (--percent P --port PORT|any | --clear)
#   cluster.sh drops    --name NAME          # per host: hI dropped_packets dropped_bytes (nft counters)
#   cluster.sh list     --name NAME          # namespaces of the cluster, one per line
#   cluster.sh rps      --name NAME          # per device: NS DEV QUEUE rps_cpus-mask (0: RPS off)
#   cluster.sh rate     --name NAME          # the links' TBF rate in Mbit/s (empty: not limited)
#
# up returns once IGMP snooping is in force (about 1 s after the bridge's querier is
# switched on; before that the bridge floods multicast to every port); --no-wait
# returns at once. --rate-side defaults to both; no --rate, no rate limit.
# --rps: receive packet steering on every veth0 (host side) and every bridge port
# (switch side): every rx queue's rps_cpus gets the all-CPUs mask (from nproc: 2
# cores -> 3, 16 -> ffff, 40 -> ff,ffffffff; --rps-mask overrides), so receive work
# (the bridge's replication, each receiver's IP/UDP) runs on all cores, as with a
# switch ASIC and one NIC per host, instead of in the sending core's softirq.
# Exits 77 when the kernel has no RPS (no rps_cpus file), 1 when a mask cannot be set.
# Global option -v (anywhere): print each command run.
# Exit codes: 0 ok, 1 error, 2 usage, 77 not root / tools missing / namespaces not
# permitted (CTest's skip code).
set -euo pipefail

readonly SUBNET_PREFIX=10.201.0
readonly SWITCH_ADDR=${SUBNET_PREFIX}.254/24
readonly MCAST_NET=224.0.0.0/4
readonly NFT_TABLE=mccl_fabric
readonly MAX_HOSTS=200
readonly RPS_PROBE=/sys/class/net/lo/queues/rx-0/rps_cpus

PROG=cluster.sh
VERBOSE=0

die() { echo "$PROG: $*" >&2; exit 1; }
usage_die() { echo "$PROG: $*" >&2; echo "run '$PROG --help' for usage" >&2; exit 2; }
skip() { echo "$PROG: SKIP: $*" >&2; exit 77; }
vlog() { if [[ $VERBOSE == 1 ]]; then echo "+ $*" >&2; fi; }

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'
}

# run CMD...: run quietly, show the command with -v, show its output on failure.
run() {
  vlog "$*"
  local out
  if ! out=$("$@" 2>&1); then
    echo "$PROG: command failed: $*" >&2
    [[ -n $out ]] && printf '%s\n' "$out" >&2
    return 1
  fi
  if [[ $VERBOSE == 1 && -n $out ]]; then printf '%s\n' "$out" >&2; fi
  return 0
}

need_root() {
  if [[ $(id -u) -ne 0 ]]; then
    skip "must run as root (network namespaces, veth, bridge, tc, nftables)"
  fi
}

need_tools() {
  local missing=() t
  for t in "$@"; do
    command -v "$t" >/dev/null 2>&1 || missing+=("$t")
  done
  if ((${#missing[@]})); then
    skip "missing tools: ${missing[*]} (apt-get install iproute2 nftables)"
  fi
}

check_name() {
  local name=$1
  [[ -n $name ]] || usage_die "--name is required"
  # Short so that "<name>s<index>" fits in IFNAMSIZ-1 = 15 characters.
  [[ $name =~ ^[A-Za-z][A-Za-z0-9]{0,10}$ ]] ||
    usage_die "bad --name '$name': 1-11 characters [A-Za-z0-9], starting with a letter"
}

ns_sw() { echo "$1-sw"; }
ns_host() { echo "$1-h$2"; }
port_name() { echo "$1s$2"; } # bridge-side veth of host $2, lives in the switch namespace

# Namespaces that belong to cluster NAME (exact pattern, never a prefix match).
cluster_namespaces() {
  local name=$1
  ip netns list 2>/dev/null | awk -v n="$name" '
    { ns = $1; if (ns == n "-sw" || (index(ns, n "-h") == 1 && substr(ns, length(n) + 3) ~ /^[0-9]+$/)) print ns }'
}

# Host indices of cluster NAME, sorted numerically.
cluster_hosts() {
  local name=$1
  cluster_namespaces "$name" | sed -n "s/^$name-h\([0-9][0-9]*\)\$/\1/p" | sort -n
}

# ---------------------------------------------------------------- loss rules

# loss_rule PERCENT PORT -> prints the nft rule body. It matches only multicast from
# another host: the input hook also sees the host's own multicast looped back
# (IP_MULTICAST_LOOP), and dropping that copy models no loss on the wire (the sender
# needs no repair of what it sent), yet the counter would report it as loss.
loss_rule() {
  local pct=$1 port=$2 match
  if [[ $port == any ]]; then
    match="meta l4proto udp"
  else
    match="udp dport $port"
  fi
  match="fib saddr type != local $match"
  local whole=${pct%.*} frac=0
  [[ $pct != *.* ]] || frac=${pct#*.}00
  local bp=$((10#$whole * 100 + 10#${frac:0:2})) # basis points
  if ((bp >= 10000)); then
    echo "ip daddr $MCAST_NET $match counter drop" # nft rejects "mod 100 < 100"
  elif ((bp % 100 == 0)); then
    echo "ip daddr $MCAST_NET $match numgen random mod 100 < $((bp / 100)) counter drop"
  else
    echo "ip daddr $MCAST_NET $match numgen random mod 10000 < $bp counter drop"
  fi
}

check_percent() {
  [[ $1 =~ ^[0-9]{1,3}(\.[0-9]{1,2})?$ ]] || usage_die "bad loss percent '$1' (0-100, up to 2 decimals)"
  local whole=${1%.*}
  if ((10#$whole > 100)) || { ((10#$whole == 100)) && [[ $1 =~ \.[0-9]*[1-9] ]]; }; then
    usage_die "bad loss percent '$1' (0-100)"
  fi
}

check_port() {
  [[ $1 == any ]] && return 0
  if ! [[ $1 =~ ^[0-9]{1,5}$ ]] || ((10#$1 < 1 || 10#$1 > 65535)); then
    usage_die "bad loss port '$1' (1-65535 or any)"
  fi
}

# add_loss NS PERCENT PORT: create the table/chain if needed, append a rule.
add_loss() {
  local ns=$1 pct=$2 port=$3
  if ! ip netns exec "$ns" nft list table ip "$NFT_TABLE" >/dev/null 2>&1; then
    run ip netns exec "$ns" nft -f - <<EOF || return 1
table ip $NFT_TABLE {
  chain input {
    type filter hook input priority 0; policy accept;
  }
}
EOF
  fi
  # shellcheck disable=SC2046  # the rule is deliberately word-split into nft tokens
  run ip netns exec "$ns" nft add rule ip "$NFT_TABLE" input $(loss_rule "$pct" "$port")
}

# ---------------------------------------------------------------- receive packet steering

# rps_all_mask N: the rps_cpus mask of CPUs 0..N-1 in the kernel's format, 32-bit hex
# groups separated by commas, most significant first (40 -> ff,ffffffff).
rps_all_mask() {
  local n=$1 mask="" bits group
  while ((n > 0)); do
    bits=$((n > 32 ? 32 : n))
    group=$(printf '%x' $(((1 << bits) - 1)))
    if [[ -n $mask ]]; then mask=$group,$mask; else mask=$group; fi
    n=$((n - bits))
  done
  echo "$mask"
}

# set_rps NS DEV MASK: write MASK to every rx queue of DEV inside NS (ip netns exec
# remounts /sys, so the path is that namespace's device).
set_rps() {
  local ns=$1 dev=$2 mask=$3 out
  vlog "ip netns exec $ns: echo $mask > /sys/class/net/$dev/queues/rx-*/rps_cpus"
  # shellcheck disable=SC2016  # expanded by the inner sh
  if ! out=$(ip netns exec "$ns" sh -c '
      n=0
      for f in /sys/class/net/"$1"/queues/rx-*/rps_cpus; do
        [ -e "$f" ] || { echo "no $f (kernel without CONFIG_RPS?)"; exit 1; }
        [ -w "$f" ] || { echo "$f is not writable"; exit 1; }
        echo "$2" >"$f" || { echo "cannot write $2 to $f"; exit 1; }
        n=$((n + 1))
      done
      [ "$n" -gt 0 ]' sh "$dev" "$mask" 2>&1); then
    echo "$PROG: --rps: cannot set receive packet steering on $dev in $ns: ${out:-no rx queue}" >&2
    return 1
  fi
}

# cmd_rps NAME: one line per rx queue of every veth0 and bridge port:
# "NS DEV QUEUE MASK" (a mask of zeros: RPS off on that queue).
cmd_rps() {
  local name=$1 i sw hosts
  hosts=$(cluster_hosts "$name")
  [[ -n $hosts ]] || die "no cluster named $name"
  sw=$(ns_sw "$name")
  show() { # NS DEV
    # shellcheck disable=SC2016  # expanded by the inner sh
    ip netns exec "$1" sh -c '
      for f in /sys/class/net/"$1"/queues/rx-*/rps_cpus; do
        q=${f%/rps_cpus}; q=${q##*/}
        if [ -r "$f" ]; then m=$(cat "$f"); else m=unavailable; fi
        printf "%s %s %s %s\n" "$2" "$1" "$q" "$m"
      done' sh "$2" "$1"
  }
  for i in $hosts; do show "$(ns_host "$name" "$i")" veth0; done
  for i in $hosts; do show "$sw" "$(port_name "$name" "$i")"; done
}

# cmd_rate NAME: the slowest TBF rate on host 0's link (its veth0 and its bridge
# port), in Mbit/s; nothing when the cluster's links are not rate-limited. A veth
# reports 10 Gbit/s whatever its rate limiter allows, so the launchers tell MCCL
# this rate (MCCL_UDP_RATE_MBIT), as a user does where an interface misreports.
cmd_rate() {
  local name=$1
  [[ -n $(cluster_hosts "$name") ]] || die "no cluster named $name"
  { ip netns exec "$(ns_host "$name" 0)" tc qdisc show dev veth0 2>/dev/null || true
    ip netns exec "$(ns_sw "$name")" tc qdisc show dev "$(port_name "$name" 0)" 2>/dev/null || true; } |
    awk '$2 == "tbf" { for (i = 3; i < NF; i++) if ($i == "rate") { r = $(i + 1)
           v = r + 0; u = substr(r, length(v "") + 1)
           if (u == "Gbit") v *= 1000; else if (u == "Kbit") v /= 1000; else if (u == "bit") v /= 1e6
           if (best == "" || v < best) best = v } }
         END { if (best != "") print best }'
}

# ---------------------------------------------------------------- down

cmd_down() {
  local name=$1 ns pids
  local nss
  nss=$(cluster_namespaces "$name")
  if [[ -z $nss ]]; then
    remove_offload_files "$name"
    return 0
  fi
  # A namespace outlives `ip netns del` while a process is inside it; end what still
  # runs there (only processes inside this run's namespaces).
  for ns in $nss; do
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    if [[ -n $pids ]]; then
      vlog "kill -KILL $pids  (left in $ns)"
      # shellcheck disable=SC2086
      kill -KILL $pids 2>/dev/null || true
    fi
  done
  for ns in $nss; do
    vlog "ip netns del $ns"
    ip netns del "$ns" 2>/dev/null || true
  done
  remove_offload_files "$name"
  return 0
}

# remove_offload_files NAME: the sockets, locks and logs of the offload daemons of a
# job named NAME (MCCL_OFFLOAD_JOB=NAME, as the tests and benches name their jobs after
# the cluster), in the private directory of src/common/private_dir.h. Those daemons
# were killed with the namespaces, so nothing else removes their files.
remove_offload_files() {
  local private
  private=/tmp/mccl-$(id -u)
  [[ -z ${XDG_RUNTIME_DIR:-} || ! -d $XDG_RUNTIME_DIR ]] || private=$XDG_RUNTIME_DIR
  rm -f "$private/mccl-offload-$1-"*
}

# ---------------------------------------------------------------- up

CREATED_NS=()
cleanup_partial() {
  local ns
  for ns in "${CREATED_NS[@]}"; do
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    # shellcheck disable=SC2086
    [[ -z $pids ]] || kill -KILL $pids 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
  done
}

add_ns() {
  local ns=$1 out
  vlog "ip netns add $ns"
  if ! out=$(ip netns add "$ns" 2>&1); then
    if [[ $out == *"Operation not permitted"* || $out == *"Permission denied"* ]]; then
      cleanup_partial
      skip "cannot create network namespaces here: $out"
    fi
    echo "$PROG: ip netns add $ns failed: $out" >&2
    return 1
  fi
  CREATED_NS+=("$ns")
  # Quiet links: no IPv6 (router solicitations, MLD) so byte counters show only
  # what the test sent. Ignore failure when the kernel has no IPv6.
  ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 >/dev/null 2>&1 || true
  run ip -n "$ns" link set lo up
}

# The rate counts what an Ethernet wire carries: the qdisc sees each frame with its
# 14-byte header, and `overhead 24` adds the FCS, preamble and inter-frame gap, so a
# rate of 1gbit carries what a 1 Gbit/s Ethernet link does (MCCL_UDP_FRAME_OVERHEAD).
add_tbf() {
  local ns=$1 dev=$2 rate=$3
  run ip netns exec "$ns" tc qdisc replace dev "$dev" root tbf rate "$rate" burst 128kb latency 20ms \
    overhead 24
}

do_up() {
  local name=$1 hosts=$2 rate=$3 side=$4 mtu=$5 rps_mask=$6
  shift 6
  local -a losses=("$@")
  local sw i h port
  sw=$(ns_sw "$name")

  add_ns "$sw"
  # The querier is switched on at the end of do_up: when it is set, the kernel waits
  # one query response interval before it trusts snooping (until then it floods), and
  # within one `ip link add` the querier attribute is applied before the interval
  # attribute, so a combined command waits the default 10 s instead of 1 s.
  run ip -n "$sw" link add br0 type bridge mcast_snooping 1 mcast_query_response_interval 100
  run ip -n "$sw" link set br0 mtu "$mtu"
  run ip -n "$sw" addr add "$SWITCH_ADDR" dev br0

  for ((i = 0; i < hosts; i++)); do
    h=$(ns_host "$name" "$i")
    port=$(port_name "$name" "$i")
    add_ns "$h"
    # Create both ends directly inside their namespaces: nothing touches the root namespace.
    run ip -n "$h" link add veth0 mtu "$mtu" type veth peer name "$port" mtu "$mtu" netns "$sw"
    run ip -n "$sw" link set "$port" master br0
    run ip -n "$sw" link set "$port" up
    run ip -n "$h" addr add "$SUBNET_PREFIX.$((i + 1))/24" dev veth0
    run ip -n "$h" link set veth0 up
    run ip -n "$h" route add "$MCAST_NET" dev veth0
    if [[ -n $rps_mask ]]; then
      set_rps "$h" veth0 "$rps_mask"
      set_rps "$sw" "$port" "$rps_mask"
    fi
    if [[ -n $rate ]]; then
      if [[ $side == inject || $side == both ]]; then add_tbf "$h" veth0 "$rate"; fi
      if [[ $side == eject || $side == both ]]; then add_tbf "$sw" "$port" "$rate"; fi
    fi
  done
  run ip -n "$sw" link set br0 up
  run ip -n "$sw" link set br0 type bridge mcast_querier 1
  QUERIER_SET_AT=$EPOCHREALTIME

  local spec li lp lport
  for spec in "${losses[@]}"; do
    IFS=: read -r li lp lport <<<"$spec"
    add_loss "$(ns_host "$name" "$li")" "$lp" "$lport"
  done
}

cmd_up() {
  local name=$1 hosts=$2 rate=$3 side=$4 mtu=$5 wait_querier=$6 rps_mask=$7
  shift 7
  local ns
  # Refuse to touch an existing cluster of the same name (it belongs to someone else).
  for ns in $(cluster_namespaces "$name"); do
    die "namespace $ns already exists; pick a unique --name (or run '$PROG down --name $name')"
  done
  # do_up runs under errexit (not inside an `if`, which would disable it): any failing
  # step exits, and the EXIT trap removes exactly the namespaces this call created.
  trap 'rc=$?; if ((rc != 0)); then cleanup_partial; echo "$PROG: up failed; removed what it created" >&2; fi' EXIT
  trap 'exit 130' INT TERM HUP
  do_up "$name" "$hosts" "$rate" "$side" "$mtu" "$rps_mask" "$@"
  trap - EXIT INT TERM HUP
  if ((wait_querier)); then
    # Until one query response interval (1 s) has passed since the querier was set,
    # the bridge floods multicast to every port; return once snooping holds.
    local left
    left=$(awk -v a="$QUERIER_SET_AT" -v b="$EPOCHREALTIME" 'BEGIN { l = a + 1.1 - b; printf "%.3f", (l > 0 ? l : 0) }')
    vlog "sleep $left  (querier delay)"
    sleep "$left"
  fi
  vlog "cluster $name up: $(cluster_namespaces "$name" | tr '\n' ' ')${rps_mask:+ (rps_cpus $rps_mask)}"
}

# ---------------------------------------------------------------- others

resolve_ns() { # NAME HOST -> namespace name; HOST is an index or "sw"
  local name=$1 host=$2 ns
  if [[ $host == sw ]]; then ns=$(ns_sw "$name"); else
    [[ $host =~ ^[0-9]+$ ]] || usage_die "bad --host '$host' (index or sw)"
    ns=$(ns_host "$name" "$((10#$host))")
  fi
  ip netns list 2>/dev/null | awk '{print $1}' | grep -qxF "$ns" || die "no namespace $ns (is cluster $name up?)"
  echo "$ns"
}

cmd_counters() {
  local name=$1 i
  local hosts
  hosts=$(cluster_hosts "$name")
  [[ -n $hosts ]] || die "no cluster named $name"
  for i in $hosts; do
    # ip netns exec remounts /sys, so these are this namespace's veth0 counters.
    # shellcheck disable=SC2016  # expanded by the inner sh
    ip netns exec "$(ns_host "$name" "$i")" sh -c '
      d=/sys/class/net/veth0/statistics
      printf "h%s %s %s %s %s\n" "$0" "$(cat $d/tx_bytes)" "$(cat $d/rx_bytes)" \
        "$(cat $d/tx_packets)" "$(cat $d/rx_packets)"' "$i"
  done
}

cmd_drops() {
  local name=$1 i hosts
  hosts=$(cluster_hosts "$name")
  [[ -n $hosts ]] || die "no cluster named $name"
  for i in $hosts; do
    { ip netns exec "$(ns_host "$name" "$i")" nft list table ip "$NFT_TABLE" 2>/dev/null || true; } |
      awk -v h="h$i" '
        { for (k = 1; k < NF; k++) if ($k == "counter" && $(k+1) == "packets") { p += $(k+2); b += $(k+4) } }
        END { printf "%s %d %d\n", h, p, b }'
  done
}

cmd_loss() {
  local name=$1 host=$2 pct=$3 port=$4 clear=$5 ns
  ns=$(resolve_ns "$name" "$host")
  [[ $host != sw ]] || usage_die "loss applies to host namespaces, not sw"
  if [[ $clear == 1 ]]; then
    ip netns exec "$ns" nft delete table ip "$NFT_TABLE" 2>/dev/null || true
    return 0
  fi
  add_loss "$ns" "$pct" "$port"
}

# ---------------------------------------------------------------- main

main() {
  local sub=${1:-}
  [[ -n $sub ]] || usage_die "missing subcommand (up|down|exec|counters|loss|drops|list|rps|rate)"
  shift
  case $sub in -h | --help | help) usage; exit 0 ;; esac

  local name="" hosts="" rate="" side=both mtu=1500 host="" percent="" port="" clear=0 wait_querier=1
  local rps=0 rps_mask=""
  local -a losses=() cmd=()
  local lh="" lpct="" lport=""
  flush_loss() {
    if [[ -n $lh || -n $lpct || -n $lport ]]; then
      [[ -n $lh && -n $lpct && -n $lport ]] ||
        usage_die "--loss-host, --loss-percent and --loss-port go together"
      [[ $lh =~ ^[0-9]+$ ]] || usage_die "bad --loss-host '$lh'"
      check_percent "$lpct"
      check_port "$lport"
      losses+=("$((10#$lh)):$lpct:$lport")
      lh="" lpct="" lport=""
    fi
  }
  while (($#)); do
    case $1 in
      -v | --verbose) VERBOSE=1; shift ;;
      -h | --help) usage; exit 0 ;;
      --name) name=${2-}; shift 2 ;;
      --hosts) hosts=${2-}; shift 2 ;;
      --rate) rate=${2-}; shift 2 ;;
      --rate-side) side=${2-}; shift 2 ;;
      --mtu) mtu=${2-}; shift 2 ;;
      --host) host=${2-}; shift 2 ;;
      --percent) percent=${2-}; shift 2 ;;
      --port) port=${2-}; shift 2 ;;
      --clear) clear=1; shift ;;
      --no-wait) wait_querier=0; shift ;;
      --rps) rps=1; shift ;;
      --rps-mask) rps_mask=${2-}; shift 2 ;;
      --loss-host) [[ -z $lh ]] || flush_loss; lh=${2-}; shift 2 ;;
      --loss-percent) [[ -z $lpct ]] || flush_loss; lpct=${2-}; shift 2 ;;
      --loss-port) [[ -z $lport ]] || flush_loss; lport=${2-}; shift 2 ;;
      --) shift; cmd=("$@"); break ;;
      *) usage_die "unknown argument '$1'" ;;
    esac
  done
  flush_loss

  check_name "$name"
  need_root
  case $sub in
    up)
      need_tools ip tc nft
      if ! [[ $hosts =~ ^[0-9]+$ ]] || ((10#$hosts < 1 || 10#$hosts > MAX_HOSTS)); then
        usage_die "--hosts must be 1..$MAX_HOSTS"
      fi
      hosts=$((10#$hosts))
      local longest
      longest=$(port_name "$name" "$((hosts - 1))")
      ((${#longest} <= 15)) || usage_die "interface name '$longest' exceeds 15 characters: shorten --name"
      [[ $mtu == 1500 || $mtu == 9000 ]] || usage_die "--mtu must be 1500 or 9000"
      [[ $side == inject || $side == eject || $side == both ]] ||
        usage_die "--rate-side must be inject, eject or both"
      [[ -z $rate || $rate =~ ^[0-9]+(\.[0-9]+)?([kmgt]?(bit|bps))?$ ]] ||
        usage_die "bad --rate '$rate' (e.g. 1gbit, 500mbit)"
      local spec
      for spec in "${losses[@]}"; do
        ((${spec%%:*} < hosts)) || usage_die "--loss-host ${spec%%:*} out of range (hosts 0..$((hosts - 1)))"
      done
      if [[ -n $rps_mask ]]; then
        ((rps)) || usage_die "--rps-mask goes with --rps"
        [[ $rps_mask =~ ^[0-9a-fA-F]{1,8}(,[0-9a-fA-F]{1,8})*$ && $rps_mask =~ [1-9a-fA-F] ]] ||
          usage_die "bad --rps-mask '$rps_mask' (hex, 32-bit groups separated by commas, not all zero)"
      elif ((rps)); then
        local ncpu
        ncpu=$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN)
        rps_mask=$(rps_all_mask "$ncpu")
      fi
      if ((rps)) && [[ ! -e $RPS_PROBE ]]; then
        skip "--rps: $RPS_PROBE missing: this kernel has no receive packet steering (CONFIG_RPS)"
      fi
      cmd_up "$name" "$hosts" "$rate" "$side" "$mtu" "$wait_querier" "$rps_mask" "${losses[@]}"
      ;;
    down)
      need_tools ip
      cmd_down "$name"
      ;;
    exec)
      need_tools ip
      [[ -n $host ]] || usage_die "exec needs --host I|sw"
      ((${#cmd[@]})) || usage_die "exec needs -- cmd..."
      local ns
      ns=$(resolve_ns "$name" "$host")
      vlog "ip netns exec $ns ${cmd[*]}"
      exec ip netns exec "$ns" "${cmd[@]}"
      ;;
    counters)
      need_tools ip
      cmd_counters "$name"
      ;;
    drops)
      need_tools ip nft
      cmd_drops "$name"
      ;;
    loss)
      need_tools ip nft
      [[ -n $host ]] || usage_die "loss needs --host I"
      if [[ $clear == 0 ]]; then
        [[ -n $percent && -n $port ]] || usage_die "loss needs --percent P --port PORT|any (or --clear)"
        check_percent "$percent"
        check_port "$port"
      fi
      cmd_loss "$name" "$host" "$percent" "$port" "$clear"
      ;;
    list)
      need_tools ip
      cluster_namespaces "$name"
      ;;
    rps)
      need_tools ip
      cmd_rps "$name"
      ;;
    rate)
      need_tools ip tc
      cmd_rate "$name"
      ;;
    *) usage_die "unknown subcommand '$sub'" ;;
  esac
}

main "$@"
