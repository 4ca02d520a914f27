#!/usr/bin/env bash
# crossover.sh — measures where multicast starts to beat the point-to-point
# algorithms, and prints the rows of src/coll/tuning.h (the algorithm table).
#
#   bench/tune/crossover.sh --out DIR [--ranks 2,4,8] [--where fabric|loopback]
#        [--rate 10gbit] [--max-size S] [-i ITER] [-x WARMUP] [--timeout S]
#        [--metric p50|cycle] [--reps R] [--build-dir DIR]
#
# For every team size N and both collectives it runs bench/osu's program twice,
# every size from 1 B to --max-size (default 1m) in powers of two: once with the
# point-to-point algorithm pinned (MCCL_COLL_BCAST_ALGO=binomial,
# MCCL_COLL_ALLGATHER_ALGO=bruck) and once with multicast pinned; --reps R
# (default 1) repeats that R times, the order reversed every other time. The
# crossover is the smallest size from which multicast's metric (median over the
# reps) is below the point-to-point one's at that size and at every larger size
# measured; --max-size*2 when it never is. --metric p50 (default): p50_max_us,
# per iteration the slowest rank, median over iterations; every iteration's data
# checked (-c). --metric cycle: cycle_us, rank 0's time per iteration with the
# barrier after it, which also counts what a collective leaves behind for the
# next one (a point-to-point tree's TCP traffic still draining); the programs
# then run without -c, which has no cycle (the tests check the algorithms'
# bytes). On the namespace cluster a launch settles into one of several speeds
# for all its sizes (docs/benchmarks.md, "OSU latency in a normal phase"), so
# take several reps there.
#   --where fabric    (default; root) the namespace cluster of tests/fabric/cluster.sh,
#                     one host per rank, links limited to --rate (default 10gbit,
#                     so that wire time is small), RPS on, as bench/fabric/run.sh;
#   --where loopback  mccl_run -n N on this host, UDP multicast on lo.
# Output: DIR/results.jsonl (the programs' JSON lines plus "algo"), DIR/table.txt
# (also printed: per N and collective, p2p and multicast microseconds per size and
# the crossover), DIR/rows.txt (the rows to paste into src/coll/tuning.h),
# DIR/machine.txt (CPU, load average at start and end, commit, command).
# Exit: 0 done, 1 a run failed, 2 usage, 77 not root / tools missing (fabric).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
FABRIC=$REPO/tests/fabric
PROG=tune/crossover.sh
# shellcheck source=scripts/lib/cli.sh
source "$REPO/scripts/lib/cli.sh"
# shellcheck source=scripts/lib/sweep.sh
source "$REPO/scripts/lib/sweep.sh"

orig_args=("$@")
out="" ranks="2,4,8" where=fabric rate=10gbit max_size=1048576 iters=300 warmup=30 tmo=300
metric=p50 reps=1
build="$REPO/build"
while (($#)); do
  case $1 in
    --out) out=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --where) where=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --max-size) max_size=$(size_of "$2"); shift 2 ;;
    -i) iters=$2; shift 2 ;;
    -x) warmup=$2; shift 2 ;;
    --timeout) tmo=$2; shift 2 ;;
    --metric) metric=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --build-dir) build=$2; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) usage_die "unknown argument '$1'" ;;
  esac
done
[[ -n $out ]] || usage_die "--out DIR is required"
[[ $where == fabric || $where == loopback ]] || usage_die "--where is fabric or loopback"
[[ $metric == p50 || $metric == cycle ]] || usage_die "--metric is p50 or cycle"
[[ $reps =~ ^[1-9][0-9]*$ ]] || usage_die "--reps is a positive count"
check=(-c)
[[ $metric == cycle ]] && check=()
sweep_ranks "$ranks"
mkdir -p "$out/logs"
: >"$out/results.jsonl"
sweep_machine "$out/machine.txt" "$where$([[ $where == fabric ]] && echo ", $rate links, RPS on")" \
  "$0" "${orig_args[@]}"
[[ $where == fabric ]] && sweep_cluster tune "$rate"

# run N BENCH ALGO_ENV ALGO REP: one program run, every size; JSON lines to results.jsonl.
run() {
  local n=$1 bench=$2 env=$3 algo=$4 rep=$5
  local json=$out/logs/$2-n$1-$4-r$5.json log=$out/logs/$2-n$1-$4-r$5.log
  local cmd=("$build/bench/osu/mccl_osu_$bench" -m "1:$max_size" -i "$iters" -x "$warmup" "${check[@]}"
    --json "$json")
  rm -f "$json"
  if [[ $where == fabric ]]; then
    "$FABRIC/launch.sh" --name "$cluster_name" --hosts "$n" --timeout "$tmo" --env "$env" -- "${cmd[@]}" >"$log" 2>&1
  else
    MCCL_UDP_IFACE=lo timeout "$tmo" "$build/tools/mccl_run" -n "$n" -x "$env" "${cmd[@]}" >"$log" 2>&1
  fi || { echo "$PROG: $bench at $n ranks ($algo) failed; see $log" >&2; return 1; }
  sed "s/^{/{\"algo\":\"$algo\",\"rep\":$rep,/" "$json" >>"$out/results.jsonl"
}

runs=("bcast MCCL_COLL_BCAST_ALGO=binomial p2p" "bcast MCCL_COLL_BCAST_ALGO=multicast multicast"
  "allgather MCCL_COLL_ALLGATHER_ALGO=bruck p2p" "allgather MCCL_COLL_ALLGATHER_ALGO=multicast multicast")
rc=0
for n in "${rank_list[@]}"; do
  for ((rep = 0; rep < reps; rep++)); do
    order=("${runs[@]}")
    ((rep % 2)) && order=("${runs[3]}" "${runs[2]}" "${runs[1]}" "${runs[0]}")
    for r in "${order[@]}"; do
      read -r bench env algo <<<"$r"
      run "$n" "$bench" "$env" "$algo" "$rep" || rc=1
    done
  done
done
sweep_machine_end "$out/machine.txt"

python3 "$HERE/crossover.py" "$out/results.jsonl" --baseline p2p --candidate multicast \
  --benches bcast,allgather --max-size "$max_size" --metric "${metric/p50/p50_max}_us" --out "$out"
exit $rc
