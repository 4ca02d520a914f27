#!/usr/bin/env bash
# bcast_scaling.sh — does a broadcast's time grow with the number of ranks, and
# how much of that is the fabric's? On one namespace cluster (tests/fabric),
# interleaved, --reps times over every rank count:
#   baseline  build/bench/fabric/mccl_mcast_baseline: host 0 sends --size bytes per
#             round, paced as MCCL paces (MCCL_UDP_RATE_MBIT), to N-1 receivers with
#             no protocol at all; per round the time from the sender's start to the
#             slowest receiver's last datagram, median over rounds;
#   mccl      build/bench/osu/mccl_osu_bcast --timeline: OSU's time (p50_max_us) and
#             per rank when each step happened, from the root's first datagram;
#   mccl:NAME the same with the --variant NAME's environment added (before/after
#             comparisons in one interleaved run).
#
#   sudo bench/fabric/bcast_scaling.sh --ranks 2,4,8 --rate 1gbit --out DIR
#        [--size 1m] [--reps 3] [--iters 100] [--impls baseline,mccl]
#        [--mccl-env K=V]... [--variant NAME:K=V[,K=V]...]... [--pace-mbit M]
#        [--no-rps] [--build-dir DIR]
#
# Output: DIR/results.jsonl (one line per case and repetition, with load1),
# DIR/summary.txt (also printed: per rank count and implementation the median over
# repetitions, and min..max), DIR/logs/ (each run's output, the timelines included),
# DIR/machine.txt. Wrap it in `flock -x /tmp/mccl-cpu.lock` on a shared machine.
# Exit: 0 done, 1 error, 2 usage, 77 not root / tools missing.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
FABRIC=$REPO/tests/fabric
PROG=bcast_scaling.sh
# shellcheck source=scripts/lib/cli.sh
source "$REPO/scripts/lib/cli.sh"

orig_args=("$@")
ranks="" rate="" out="" size=1048576 reps=3 iters=100 impls="baseline mccl" pace="" rps=1
build="$REPO/build"
mccl_env=()
declare -A variant_env=()
while (($#)); do
  case $1 in
    -h | --help) usage; exit 0 ;;
    --ranks) ranks=$(list_of "${2-}"); shift 2 ;;
    --rate) rate=${2-}; shift 2 ;;
    --out) out=${2-}; shift 2 ;;
    --size) size=$(size_of "${2-}"); shift 2 ;;
    --reps) reps=${2-}; shift 2 ;;
    --iters) iters=${2-}; shift 2 ;;
    --impls) impls=$(list_of "${2-}"); shift 2 ;;
    --mccl-env) mccl_env+=("${2-}"); shift 2 ;;
    --variant)
      [[ ${2-} =~ ^([a-z0-9_-]+):(MCCL_[A-Z0-9_]+=[^,]*)(,MCCL_[A-Z0-9_]+=[^,]*)*$ ]] ||
        usage_die "bad --variant '${2-}' (NAME:MCCL_K=V[,MCCL_K=V]...)"
      variant_env[${2%%:*}]=${2#*:}
      impls="$impls mccl:${2%%:*}"
      shift 2 ;;
    --pace-mbit) pace=${2-}; shift 2 ;;
    --no-rps) rps=0; shift ;;
    --build-dir) build=${2-}; shift 2 ;;
    *) usage_die "unknown argument '$1'" ;;
  esac
done
[[ -n $ranks && -n $rate && -n $out ]] || usage_die "--ranks, --rate and --out are required"
for n in $ranks; do [[ $n =~ ^[0-9]+$ ]] && ((n >= 2)) || usage_die "bad rank count '$n'"; done
[[ $reps =~ ^[0-9]+$ && $iters =~ ^[0-9]+$ ]] || usage_die "bad --reps or --iters"
for i in $impls; do [[ $i =~ ^(baseline|mccl)(:.+)?$ ]] || usage_die "bad impl '$i'"; done
for kv in "${mccl_env[@]}"; do [[ $kv =~ ^MCCL_[A-Z0-9_]+= ]] || usage_die "bad --mccl-env '$kv'"; done
rate_mbit=$(awk -v r="${rate,,}" 'BEGIN {
  if (match(r, /^[0-9.]+/)) { v = substr(r, 1, RLENGTH); u = substr(r, RLENGTH + 1) } else exit 1
  if (u == "gbit") v *= 1000; else if (u == "kbit") v /= 1000; else if (u != "mbit") exit 1
  print v }') || usage_die "bad --rate '$rate'"
[[ -n $pace ]] || pace=$rate_mbit

[[ $(id -u) -eq 0 ]] || skip "must run as root (network namespaces)"
baseline_bin=$build/bench/fabric/mccl_mcast_baseline
osu_bin=$build/bench/osu/mccl_osu_bcast
for b in "$baseline_bin" "$osu_bin"; do [[ -x $b ]] || die "$b missing: cmake --build $build"; done
# A build from before --timeline still gives OSU's figures.
timeline=(--timeline)
"$osu_bin" --help | grep -q -- --timeline || timeline=()

mkdir -p "$out/logs"
out=$(cd "$out" && pwd)
hosts=0
for n in $ranks; do ((n > hosts)) && hosts=$n; done
name="bs$$"
name=${name:0:11}
cleanup() { "$FABRIC/cluster.sh" down --name "$name" >/dev/null 2>&1 || true; }
trap cleanup EXIT
trap 'echo "$PROG: interrupted" >&2; exit 130' INT TERM HUP

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(uname -srm), $(nproc) cores"
  echo "mccl: $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown) (working tree may differ)"
  echo "loadavg at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "command: $0 ${orig_args[*]}"
} >"$out/machine.txt"
rps_args=()
((rps)) && rps_args=(--rps)
"$FABRIC/cluster.sh" up --name "$name" --hosts "$hosts" --rate "$rate" --rate-side both "${rps_args[@]}"
results=$out/results.jsonl

# The machine's CPU seconds so far: "user system softirq" (/proc/stat, all cores).
machine_cpu() {
  awk -v hz="$(getconf CLK_TCK)" '$1 == "cpu" { printf "%.2f %.2f %.2f\n", ($2 + $3) / hz, $4 / hz, ($7 + $8) / hz; exit }' /proc/stat
}

# run_baseline N REP: receivers on hosts 1..N-1, the sender on host 0.
run_baseline() {
  local n=$1 rep=$2 log=$out/logs/baseline-n$1-r$2.log load pids=() i ready
  local group=239.201.$((RANDOM % 250 + 1)).$((RANDOM % 250 + 1)) port=$((20000 + RANDOM % 12000))
  load=$(cut -d' ' -f1 /proc/loadavg)
  ready=$(mktemp -d)
  for ((i = 1; i < n; i++)); do
    timeout 120 "$FABRIC/cluster.sh" exec --name "$name" --host "$i" -- "$baseline_bin" recv \
      --group "$group" --port "$port" --iface veth0 --rounds "$iters" --timeout-ms 3000 \
      --ready "$ready/$i" >"$log.h$i" 2>&1 &
    pids+=($!)
  done
  local deadline=$((SECONDS + 10))
  while (($(find "$ready" -type f | wc -l) < n - 1)); do
    ((SECONDS < deadline)) || { rm -rf "$ready"; die "baseline receivers not ready in 10 s"; }
    sleep 0.1
  done
  rm -rf "$ready"
  local cpu0 cpu1
  cpu0=$(machine_cpu)
  timeout 120 "$FABRIC/cluster.sh" exec --name "$name" --host 0 -- "$baseline_bin" send \
    --group "$group" --port "$port" --iface veth0 --bytes "$size" --rate-mbit "$pace" \
    --rounds "$iters" --gap-ms 10 >"$log.h0" 2>&1
  cpu1=$(machine_cpu)
  for p in "${pids[@]}"; do wait "$p"; done
  cat "$log".h* >"$log" && rm -f "$log".h*
  # Per round: sender's start, the slowest receiver's last datagram, datagrams seen.
  awk -v n="$n" -v rep="$rep" -v load="$load" -v bytes="$size" -v cpu0="$cpu0" -v cpu1="$cpu1" '
    $1 == "start" { start[$2] = $3 }
    $1 == "recv" { f = $3; l = $4; if (!($2 in last) || l > last[$2]) last[$2] = l
                   if (!($2 in first) || f > first[$2]) first[$2] = f; got[$2] += $5 }
    function median(a, k,   m, i, j, t) { for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++)
                   if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
                   return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2 }
    END { k = 0; for (r in start) if (r in last) { k++; t[k] = (last[r] - start[r]) / 1e3
                                                   u[k] = (first[r] - start[r]) / 1e3 }
          split(cpu0, a, " "); split(cpu1, b, " ")
          printf "{\"impl\":\"baseline\",\"ranks\":%d,\"rep\":%d,\"bytes\":%d,\"load1\":%s,\"rounds\":%d,\"last_arrival_max_us\":%.1f,\"first_arrival_max_us\":%.1f,\"datagrams\":%d,\"machine_user_us\":%.0f,\"machine_system_us\":%.0f,\"machine_softirq_us\":%.0f}\n",
                 n, rep, bytes, load, k, median(t, k), median(u, k), got[0],
                 (b[1] - a[1]) * 1e6 / k, (b[2] - a[2]) * 1e6 / k, (b[3] - a[3]) * 1e6 / k }' "$log" >>"$results"
}

# run_mccl N REP [VARIANT]
run_mccl() {
  local n=$1 rep=$2 variant=${3-} impl=mccl${3:+:$3}
  local log=$out/logs/mccl${3:+-$3}-n$1-r$2.log load raw=$out/logs/mccl${3:+-$3}-n$1-r$2.json
  local envs=(--env "MCCL_UDP_RATE_MBIT=$pace") kv
  for kv in "${mccl_env[@]}"; do envs+=(--env "$kv"); done
  if [[ -n $variant ]]; then
    local -a extra
    IFS=, read -r -a extra <<<"${variant_env[$variant]}"
    for kv in "${extra[@]}"; do envs+=(--env "$kv"); done
  fi
  load=$(cut -d' ' -f1 /proc/loadavg)
  rm -f "$raw"
  "$FABRIC/launch.sh" --name "$name" --hosts "$n" --timeout 300 "${envs[@]}" -- \
    "$osu_bin" -m "$size:$size" -i "$iters" -x 10 "${timeline[@]}" --stats --json "$raw" >"$log" 2>&1 ||
    { echo "$PROG: mccl at $n ranks failed (see $log)" >&2; return 0; }
  sed -e "s/^{/{\"rep\":$rep,\"load1\":$load,/" -e "s/\"impl\":\"mccl\"/\"impl\":\"$impl\"/" \
    "$raw" >>"$results"
}

: >"$results"
for ((rep = 1; rep <= reps; rep++)); do
  for n in $ranks; do
    for impl in $impls; do
      if [[ $impl == mccl:* ]]; then run_mccl "$n" "$rep" "${impl#mccl:}"; else "run_$impl" "$n" "$rep"; fi
      echo "$PROG: rep $rep, $n ranks, $impl done (load $(cut -d' ' -f1 /proc/loadavg))" >&2
    done
  done
done

/usr/bin/python3 - "$results" <<'EOF' | tee "$out/summary.txt"
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
def key(r): return (r["impl"], r["ranks"])
cases = sorted({key(r) for r in rows})
print("impl            ranks | time (median of reps)  min..max      | held(max)  returned(max)  call skew | machine cpu/coll: user sys softirq (us) | load1")
for impl, n in cases:
    rs = [r for r in rows if key(r) == (impl, n)]
    if impl == "baseline":
        t = [r["last_arrival_max_us"] for r in rs]
        extra = "%10s %14s %10s" % ("-", "-", "-")
    else:
        t = [r["p50_max_us"] for r in rs]
        tl = [r.get("timeline", {}) for r in rs]
        med = lambda k: statistics.median([x[k] for x in tl if k in x]) if any(k in x for x in tl) else float("nan")
        extra = "%10.0f %14.0f %10.0f" % (med("held_max_us"), med("returned_max_us"), med("call_skew_us"))
    def machine(k):
        v = [r.get(k, r.get("timeline", {}).get(k)) for r in rs]
        v = [x for x in v if x is not None]
        return statistics.median(v) if v else float("nan")
    cpu = "%6.0f %6.0f %6.0f" % (machine("machine_user_us"), machine("machine_system_us"), machine("machine_softirq_us"))
    loads = ",".join(str(r["load1"]) for r in rs)
    print("%-15s %5d | %10.0f us %8.0f..%-8.0f | %s | %s | %s" % (impl, n, statistics.median(t), min(t), max(t), extra, cpu, loads))
EOF
