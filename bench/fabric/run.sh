#!/usr/bin/env bash
# run.sh — MCCL side by side with Open MPI on the namespace fabric (tests/fabric):
# the same rate-limited links, the same sizes, the same measurement.
#
#   sudo bench/fabric/run.sh --ranks N[,N...] --rate 1gbit --out DIR
#        [--sizes S[,S...]] [--quick] [--mtu 1500|9000] [--scaling-ranks N,N...|none]
#        [--scaling-size S] [--impls mccl,ompi-default,ompi-best]
#        [--benches bcast,allgather,ag_rs_concurrent,reduce_scatter,alltoall]
#        [--mccl-env K=V]... [--osu-arg ARG]... [--pace-mbit M] [--label NAME] [--budget SECONDS]
#        [--build-dir DIR] [--no-plots] [--no-rps]
#
# Builds one cluster (cluster.sh, unique name, torn down on exit) with as many hosts
# as the largest rank count, rate-limited both ways, with receive packet steering on
# every veth and bridge port (cluster.sh up --rps: receive work spread over all cores,
# not done in the sending core's softirq; --no-rps leaves it off; machine.txt says
# "rps: on (mask X)" or "rps: off"), then for every case (bench x ranks x size,
# plus the broadcast of --scaling-size at --scaling-ranks) runs:
#   mccl          build/bench/osu/mccl_osu_{bcast,allgather,ag_rs,alltoall} via launch.sh, with
#                 MCCL_UDP_RATE_MBIT = the link rate, as an interface would report it (MCCL
#                 paces to 99% of it, each frame's Ethernet overhead counted: link_cost.h)
#                 (--pace-mbit overrides; 0 = unpaced), plus every --mccl-env, and
#                 every --osu-arg on its command line (--osu-arg --compress
#                 --osu-arg bound:0.01: float32 data, compressed; docs/compression.md);
#   ompi-default  bench/fabric/mpi_coll_bench (built here with mpicc.openmpi) via
#                 launch.sh --mpirun: --mca pml ob1 --mca btl tcp,self
#                 --mca btl_tcp_if_include 10.201.0.0/24 (nothing bypasses the links);
#   ompi-best     the same with ring allgather, 128 KiB pipelined broadcast and ring
#                 reduce-scatter pinned.
# ag_rs_concurrent (the FSDP pattern: allgather of m per rank and reduce-scatter to m
# per rank at the same time) runs afterwards on a second cluster whose links are
# limited on injection only: MCCL through its nonblocking API, ompi-default through
# MPI_Iallgather + MPI_Ireduce_scatter_block (libnbc), ompi-best as the blocking ring
# allgather then the ring reduce-scatter (libnbc has no ring; see mpi_coll_bench.c).
# Each rank times each collective between barriers; time_s is the slowest rank per
# iteration, median over iterations; every iteration's data is checked; after the
# timed loop K more collectives run back to back and each host's veth0 counters
# give the bytes one collective put on (tx) and took off (rx) its link.
#
# Output: DIR/results.jsonl (one line per case and implementation), DIR/summary.txt
# (also printed), DIR/*.png (python3-matplotlib), DIR/machine.txt, DIR/logs/,
# DIR/raw/. Sizes accept k/m suffixes (KiB, MiB). Default sizes: 8 B to 16 MiB in
# steps of 4x (plus 16 MiB); --quick: 8, 4k, 256k, 4m and scaling ranks 2,4.
# --budget S: about S seconds of timed collectives per case (default 3, --quick 1);
# iterations are clamped to 5..200.
# Exit: 0 done (even when cases failed: see correct/error in results.jsonl), 1
# error, 2 usage, 77 not root / tools missing.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
FABRIC=$REPO/tests/fabric
PROG=run.sh

# shellcheck source=scripts/lib/cli.sh
source "$REPO/scripts/lib/cli.sh"

orig_args=("$@")
ranks="" rate="" out="" sizes="" quick=0 mtu=1500 scaling="" scaling_size=1048576
impls="mccl ompi-default ompi-best" benches="bcast allgather ag_rs_concurrent" pace="" label="" budget=""
build="$REPO/build" plots=1 rps=1
mccl_env=() osu_args=()
while (($#)); do
  case $1 in
    -h | --help) usage; exit 0 ;;
    --ranks) ranks=$(list_of "${2-}"); shift 2 ;;
    --rate) rate=${2-}; shift 2 ;;
    --out) out=${2-}; shift 2 ;;
    --sizes) sizes=$(list_of "${2-}"); shift 2 ;;
    --quick) quick=1; shift ;;
    --mtu) mtu=${2-}; shift 2 ;;
    --scaling-ranks) scaling=$(list_of "${2-}"); shift 2 ;;
    --scaling-size) scaling_size=$(size_of "${2-}"); shift 2 ;;
    --impls) impls=$(list_of "${2-}"); shift 2 ;;
    --benches) benches=$(list_of "${2-}"); shift 2 ;;
    --mccl-env) mccl_env+=("${2-}"); shift 2 ;;
    --osu-arg) osu_args+=("${2-}"); shift 2 ;;
    --pace-mbit) pace=${2-}; shift 2 ;;
    --label) label=${2-}; shift 2 ;;
    --budget) budget=${2-}; shift 2 ;;
    --build-dir) build=${2-}; shift 2 ;;
    --no-plots) plots=0; shift ;;
    --no-rps) rps=0; shift ;;
    *) usage_die "unknown argument '$1'" ;;
  esac
done

[[ -n $ranks ]] || usage_die "--ranks N is required"
[[ -n $rate ]] || usage_die "--rate is required (e.g. 1gbit)"
[[ -n $out ]] || usage_die "--out DIR is required"
for n in $ranks; do if ! [[ $n =~ ^[0-9]+$ ]] || ((n < 2)); then usage_die "bad rank count '$n' (>= 2)"; fi; done
[[ $mtu == 1500 || $mtu == 9000 ]] || usage_die "--mtu must be 1500 or 9000"
rate_mbit=$(awk -v r="${rate,,}" 'BEGIN {
  if (match(r, /^[0-9.]+/)) { v = substr(r, 1, RLENGTH); u = substr(r, RLENGTH + 1) } else exit 1
  if (u == "gbit") v *= 1000; else if (u == "kbit") v /= 1000; else if (u != "mbit") exit 1
  print v }') || usage_die "bad --rate '$rate' (kbit, mbit or gbit)"
[[ -n $pace ]] || pace=$rate_mbit
for kv in "${mccl_env[@]}"; do [[ $kv =~ ^MCCL_[A-Z0-9_]+= ]] || usage_die "bad --mccl-env '$kv'"; done
for i in $impls; do [[ $i =~ ^(mccl|ompi-default|ompi-best)$ ]] || usage_die "bad impl '$i'"; done
for b in $benches; do [[ $b =~ ^(bcast|allgather|ag_rs_concurrent|reduce_scatter|alltoall)$ ]] || usage_die "bad bench '$b'"; done
# reduce_scatter (OSU's size: the whole vector of each rank) is MCCL's only.
[[ " $benches " != *" reduce_scatter "* || $impls == mccl ]] ||
  usage_die "--benches reduce_scatter needs --impls mccl"

if [[ -z $sizes ]]; then
  if ((quick)); then sizes="8 4k 256k 4m"; else sizes="8 32 128 512 2k 8k 32k 128k 512k 2m 8m 16m"; fi
fi
sizes=$(for s in $sizes; do size_of "$s"; done | tr '\n' ' ')
if [[ -z $scaling ]]; then
  if ((quick)); then scaling="2 4"; else scaling="2 4 8"; fi
fi
[[ $scaling == none ]] && scaling=""
[[ -n $budget ]] || { if ((quick)); then budget=1; else budget=3; fi; }

[[ $(id -u) -eq 0 ]] || skip "must run as root (network namespaces)"
for t in ip tc nft awk; do command -v $t >/dev/null 2>&1 || skip "missing tool: $t"; done
[[ " $impls " == *" ompi"* ]] && ! command -v mpicc.openmpi >/dev/null 2>&1 &&
  skip "Open MPI not installed: apt-get install openmpi-bin libopenmpi-dev"
# mccl_program BENCH: the OSU-style program that measures BENCH.
mccl_program() { if [[ $1 == ag_rs_concurrent ]]; then echo mccl_osu_ag_rs; else echo "mccl_osu_$1"; fi; }
if [[ " $impls " == *" mccl "* ]]; then
  for b in $benches; do
    [[ -x $build/bench/osu/$(mccl_program "$b") ]] ||
      die "$build/bench/osu/$(mccl_program "$b") missing: cmake --build $build (or --build-dir DIR)"
  done
fi

mkdir -p "$out/raw" "$out/logs" "$out/bin"
out=$(cd "$out" && pwd)
build=$(cd "$build" && pwd)
hosts=0
for n in $ranks $scaling; do ((n > hosts)) && hosts=$n; done
name="fb$$"
name=${name:0:11}
rate_side=both

cleanup() { "$FABRIC/cluster.sh" down --name "$name" >/dev/null 2>&1 || true; }
trap cleanup EXIT
trap 'echo "$PROG: interrupted" >&2; exit 130' INT TERM HUP

if [[ " $impls " == *" ompi"* ]]; then
  mpicc.openmpi -O2 -o "$out/bin/mpi_coll_bench" "$HERE/mpi_coll_bench.c"
fi

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(uname -srm), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
  echo "memory: $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)"
  echo "mccl: $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown) (working tree may differ)"
  echo "open mpi: $(mpirun.openmpi --version 2>/dev/null | head -1 || echo none)"
  echo "loadavg at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "command: $0 ${orig_args[*]}"
} >"$out/machine.txt"

# cluster_up SIDE: (re)build the cluster with links limited on SIDE (both|inject).
rps_args=()
if ((rps)); then rps_args=(--rps); fi
rps_noted=0
cluster_up() {
  cleanup
  rate_side=$1
  "$FABRIC/cluster.sh" up --name "$name" --hosts "$hosts" --rate "$rate" --rate-side "$rate_side" --mtu "$mtu" \
    "${rps_args[@]}"
  # What the cluster really has, read back from every veth0 and bridge port.
  local masks rps_line
  masks=$("$FABRIC/cluster.sh" rps --name "$name" | awk '{ print $4 }' | sort -u | tr '\n' ' ')
  masks=${masks% }
  if [[ $masks =~ ^0+(,0+)*$ ]]; then rps_line="rps: off"
  elif [[ $masks != *" "* ]]; then rps_line="rps: on (mask $masks)"
  else rps_line="rps: mixed (masks $masks)"; fi
  if ((!rps_noted)); then echo "$rps_line" >>"$out/machine.txt"; rps_noted=1; fi
  echo "$PROG: cluster $name: $hosts hosts, $rate ($rate_side), MTU $mtu, $rps_line; results in $out" >&2
}

best_mca=(--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allgather_algorithm 4
  --mca coll_tuned_bcast_algorithm 3 --mca coll_tuned_bcast_algorithm_segmentsize 131072
  --mca coll_tuned_reduce_scatter_algorithm 3)
points=$out/points.jsonl
config_json=$(printf '"%s",' "MCCL_UDP_RATE_MBIT=$pace" "${mccl_env[@]}")
config_json="[${config_json%,}]"

# drop_counts: where datagrams were lost in the cluster, as four totals: packets the
# switch's port qdiscs dropped (towards the hosts: incast), packets the hosts' own
# qdiscs dropped (injection), and the hosts' Udp InErrors and RcvbufErrors
# (/proc/net/snmp: socket buffers and checksums); then each host's InErrors and
# OutDatagrams. A host's own multicast datagrams come back to its receive socket
# (IP_MULTICAST_LOOP) and MCCL's own-source filter drops them there, which the
# kernel counts as InErrors: one per datagram sent, so the part of a host's
# InErrors up to its OutDatagrams is that, not loss ("udp_own_looped"). With GSO
# a qdisc drops a whole superpacket, counted once, and a superpacket is one
# OutDatagram; with GRO a receive buffer may be a coalesced run.
qdisc_drops() {
  ip netns exec "$1" tc -s qdisc show 2>/dev/null |
    awk '{ for (i = 1; i < NF; i++) if ($i == "(dropped") { sub(",", "", $(i + 1)); d += $(i + 1) } } END { print d + 0 }'
}
drop_counts() {
  local i sw host=0 inerr=0 rcvbuf=0 per_host="" v a b c
  sw=$(qdisc_drops "$name-sw")
  for ((i = 0; i < hosts; i++)); do
    v=$(qdisc_drops "$name-h$i")
    host=$((host + v))
    read -r a b c < <(ip netns exec "$name-h$i" awk '$1 == "Udp:" && $2 ~ /^[0-9]+$/ { print $4, $6, $5 }' /proc/net/snmp)
    inerr=$((inerr + ${a:-0}))
    rcvbuf=$((rcvbuf + ${b:-0}))
    per_host+=" ${a:-0} ${c:-0}"
  done
  echo "$sw $host $inerr $rcvbuf$per_host"
}

# run_case IMPL BENCH RANKS BYTES: one launch, one JSON line in raw/, one in points.jsonl.
run_case() {
  local impl=$1 bench=$2 n=$3 m=$4
  # Iterations from a time budget: the bound (plus a latency floor) times 3 as the guess.
  local est iters warm k tmo
  est=$(awk -v b="$bench" -v n="$n" -v m="$m" -v r="$rate_mbit" 'BEGIN {
    f = (b == "allgather" || b == "alltoall") ? n - 1 : (b == "ag_rs_concurrent") ? 2 * (n - 1) : 1
    print 3 * f * m * 8 / (r * 1e6) + 0.0005 }')
  iters=$(awk -v e="$est" -v t="$budget" 'BEGIN { i = int(t / e); if (i < 5) i = 5; if (i > 200) i = 200; print i }')
  warm=$(((iters + 9) / 10))
  k=$((iters / 4)); ((k >= 2)) || k=2; ((k <= 20)) || k=20
  tmo=$(awk -v e="$est" -v c="$((iters + warm + k))" 'BEGIN { print int(90 + 20 * e * c) }')
  local tag="$impl${label:+-$label}-$bench-n$n-$m"
  local raw=$out/raw/$tag.json log=$out/logs/$tag.log
  rm -f "$raw"
  local load rc=0 t0 t1 drops0 drops1 drops_json
  load=$(cut -d' ' -f1 /proc/loadavg)
  drops0=$(drop_counts)
  t0=$(date +%s.%N)
  if [[ $impl == mccl ]]; then
    local envs=(--env "MCCL_UDP_RATE_MBIT=$pace") kv
    for kv in "${mccl_env[@]}"; do envs+=(--env "$kv"); done
    "$FABRIC/launch.sh" --name "$name" --hosts "$n" --timeout "$tmo" "${envs[@]}" -- \
      "$build/bench/osu/$(mccl_program "$bench")" -m "$m:$m" -i "$iters" -x "$warm" -c -u 0 \
      --json "$raw" --netdev veth0 --traffic-iters "$k" "${osu_args[@]}" >"$log" 2>&1 || rc=$?
  else
    local margs=() a
    local pair=()
    if [[ $impl == ompi-best ]]; then
      for a in "${best_mca[@]}"; do margs+=(--mpirun-arg "$a"); done
      pair=(--sequential)
    fi
    "$FABRIC/launch.sh" --mpirun --name "$name" --hosts "$n" --timeout "$tmo" "${margs[@]}" -- \
      "$out/bin/mpi_coll_bench" -b "$bench" -m "$m:$m" -i "$iters" -x "$warm" -c --impl "$impl" "${pair[@]}" \
      --json "$raw" --netdev veth0 --traffic-iters "$k" >"$log" 2>&1 || rc=$?
  fi
  t1=$(date +%s.%N)
  drops1=$(drop_counts)
  # Over the whole launch (warm-up, timed and traffic iterations alike).
  drops_json=$(paste -d' ' <(echo "$drops0") <(echo "$drops1") | awk '{
    half = NF / 2; own = 0
    for (i = 5; i < half; i += 2) {
      e = $(half + i) - $i; o = $(half + i + 1) - $(i + 1)
      own += e < o ? e : o
    }
    printf "{\"switch_qdisc\":%d,\"host_qdisc\":%d,\"udp_in_errors\":%d,\"udp_rcvbuf_errors\":%d,\"udp_own_looped\":%d}",
      $(half + 1) - $1, $(half + 2) - $2, $(half + 3) - $3, $(half + 4) - $4, own }')
  printf '{"impl":"%s","variant":"%s","bench":"%s","ranks":%d,"bytes_per_rank":%d,"rate_mbit":%s,"rate_side":"%s","mtu":%d,"rc":%d,"load1":%s,"wall_s":%.1f,"drops":%s,"raw":"%s","config":%s}\n' \
    "$impl" "$label" "$bench" "$n" "$m" "$rate_mbit" "$rate_side" "$mtu" "$rc" "$load" \
    "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" "$drops_json" "raw/$tag.json" \
    "$([[ $impl == mccl ]] && echo "$config_json" || echo '[]')" >>"$points"
  printf "%-13s %-16s %2d ranks %9d B: rc %d, load %s, drops %s, %s\n" \
    "$impl" "$bench" "$n" "$m" "$rc" "$load" "$drops_json" \
    "$( [[ -s $raw ]] && awk -F'"p50_max_us":' '{ split($2, a, ","); printf "%.1f us", a[1] }' "$raw" || echo "no result")" >&2
}

if [[ " $benches " == *" bcast "* || " $benches " == *" allgather "* ||
  " $benches " == *" reduce_scatter "* || " $benches " == *" alltoall "* ]]; then
  cluster_up both
  for n in $ranks; do
    for bench in $benches; do
      [[ $bench != ag_rs_concurrent ]] || continue
      for m in $sizes; do
        for impl in $impls; do run_case "$impl" "$bench" "$n" "$m"; done
      done
    done
  done
  if [[ " $benches " == *" bcast "* ]]; then
    for n in $scaling; do
      # Already measured when the size was in the sweep at this rank count.
      if [[ " $ranks " == *" $n "* && " $sizes " == *" $scaling_size "* ]]; then continue; fi
      for impl in $impls; do run_case "$impl" bcast "$n" "$scaling_size"; done
    done
  fi
fi
if [[ " $benches " == *" ag_rs_concurrent "* ]]; then
  cluster_up inject
  for n in $ranks; do
    for m in $sizes; do
      # The reduce-scatter works on float32 elements: sizes below 4 B have none.
      ((m >= 4)) || continue
      for impl in $impls; do run_case "$impl" ag_rs_concurrent "$n" "$m"; done
    done
  done
fi
echo "loadavg at end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/machine.txt"

cleanup
trap - EXIT

py=""
for p in /usr/bin/python3 python3; do
  if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import json' 2>/dev/null; then py=$p; break; fi
done
[[ -n $py ]] || die "python3 is needed for the report"
report_args=(--scaling-size "$scaling_size")
((plots)) || report_args+=(--no-plots)
"$py" "$HERE/report.py" "${report_args[@]}" "$out"
