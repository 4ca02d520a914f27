#!/usr/bin/env bash
# latency.sh — OSU-style latency tables: MCCL's bench/osu programs under the
# inline and the thread engine beside Open MPI's default and best (the same
# measurement: bench/fabric/mpi_coll_bench), every size from 1 B to --max-size
# in powers of two, for broadcast and allgather.
#
#   bench/osu/latency.sh --out DIR [--where fabric|loopback] [--ranks 2,4,8]
#        [--rate 10gbit] [--max-size S] [-i ITER] [-x WARMUP] [--timeout S]
#        [--build-dir DIR] [--pin] [--no-validate]
#
#   --where fabric    (default; root) the namespace cluster of tests/fabric/cluster.sh,
#                     one host per rank, links limited to --rate (default 10gbit),
#                     RPS on; Open MPI over TCP on the veths;
#   --where loopback  one host: MCCL's ranks through tools/mccl_run on lo, Open MPI's
#                     with btl tcp,self on lo (no shared memory: both use the kernel's
#                     loopback; Open MPI's default on one host would use shared memory).
#   --pin             (loopback) every rank of either implementation on one core,
#                     rank r on the r-th usable CPU modulo their number (pin_rank.py;
#                     Open MPI with --bind-to none, so that its own binding, which
#                     pins 2 ranks and not more, does not apply). Without it the
#                     scheduler places MCCL's ranks, and mpirun binds Open MPI's
#                     at 2 ranks only.
#   --no-validate     no -c: the data is not checked, and the programs report
#                     cycle_us (a timed iteration with the barrier after it, which
#                     does not depend on where the barrier leaves each rank; at 2
#                     ranks the OSU figure does), tabled beside p50 by the report.
# One launch per (implementation, ranks, collective) covers every size.
# Implementations: mccl-inline, mccl-thread (MCCL_PROGRESS), ompi-default,
# ompi-best (ring allgather, 128 KiB pipelined chain broadcast, as bench/fabric/run.sh).
# Output: DIR/results.jsonl (the programs' JSON lines plus "series", the
# implementation above, and "where"), DIR/table.md and DIR/latency.png
# (bench/osu/latency_report.py), DIR/machine.txt
# (CPU, load average at start and end, commit, command), DIR/logs/.
# Exit: 0 done, 1 a run failed, 2 usage, 77 not root / tools missing.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
FABRIC=$REPO/tests/fabric
PROG=osu/latency.sh
# shellcheck source=scripts/lib/cli.sh
source "$REPO/scripts/lib/cli.sh"
# shellcheck source=scripts/lib/sweep.sh
source "$REPO/scripts/lib/sweep.sh"

orig_args=("$@")
out="" where=fabric ranks="2,4,8" rate=10gbit max_size=1048576 iters=500 warmup=50 tmo=300 pin=0 check=(-c)
build="$REPO/build"
while (($#)); do
  case $1 in
    --out) out=$2; shift 2 ;;
    --where) where=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --max-size) max_size=$(size_of "$2"); shift 2 ;;
    -i) iters=$2; shift 2 ;;
    -x) warmup=$2; shift 2 ;;
    --timeout) tmo=$2; shift 2 ;;
    --build-dir) build=$(cd "$2" && pwd); shift 2 ;;
    --pin) pin=1; shift ;;
    --no-validate) check=(); shift ;;
    -h | --help) usage; exit 0 ;;
    *) usage_die "unknown argument '$1'" ;;
  esac
done
[[ -n $out ]] || usage_die "--out DIR is required"
[[ $where == fabric || $where == loopback ]] || usage_die "--where is fabric or loopback"
[[ $pin == 0 || $where == loopback ]] || usage_die "--pin is for --where loopback"
# What runs each rank's program: pin_rank.py under --pin.
wrap=() ompi_bind=()
((pin)) && wrap=("$HERE/pin_rank.py") && ompi_bind=(--bind-to none)
sweep_ranks "$ranks"
command -v mpicc.openmpi >/dev/null || skip "Open MPI (mpicc.openmpi) is not installed"
mkdir -p "$out/logs" "$out/bin"
: >"$out/results.jsonl"
mpicc.openmpi -O2 -o "$out/bin/mpi_coll_bench" "$REPO/bench/fabric/mpi_coll_bench.c"
sweep_machine "$out/machine.txt" "$where$([[ $where == fabric ]] && echo ", $rate links, RPS on")" \
  "$0" "${orig_args[@]}"
[[ $where == fabric ]] && sweep_cluster lat "$rate"
best_mca=(--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allgather_algorithm 4
  --mca coll_tuned_bcast_algorithm 3 --mca coll_tuned_bcast_algorithm_segmentsize 131072)

# run N BENCH IMPL: one launch, every size; JSON lines to results.jsonl.
run() {
  local n=$1 bench=$2 impl=$3
  local json=$out/logs/$impl-$bench-n$n.json log=$out/logs/$impl-$bench-n$n.log
  local sizes=(-m "1:$max_size" -i "$iters" -x "$warmup" "${check[@]}" --json "$json") cmd mca=() a
  rm -f "$json"
  if [[ $impl == mccl-* ]]; then
    cmd=("$build/bench/osu/mccl_osu_$bench" "${sizes[@]}")
    if [[ $where == fabric ]]; then
      "$FABRIC/launch.sh" --name "$cluster_name" --hosts "$n" --timeout "$tmo" \
        --env "MCCL_PROGRESS=${impl#mccl-}" -- "${cmd[@]}"
    else
      MCCL_UDP_IFACE=lo timeout "$tmo" "$build/tools/mccl_run" -n "$n" \
        -x "MCCL_PROGRESS=${impl#mccl-}" "${wrap[@]}" "${cmd[@]}"
    fi
  else
    cmd=("$out/bin/mpi_coll_bench" -b "$bench" "${sizes[@]}" --impl "$impl")
    [[ $impl == ompi-best ]] && mca=("${best_mca[@]}")
    if [[ $where == fabric ]]; then
      local margs=()
      for a in "${mca[@]}"; do margs+=(--mpirun-arg "$a"); done
      "$FABRIC/launch.sh" --mpirun --name "$cluster_name" --hosts "$n" --timeout "$tmo" "${margs[@]}" -- "${cmd[@]}"
    else
      timeout "$tmo" mpirun.openmpi --allow-run-as-root --oversubscribe -np "$n" --mca pml ob1 \
        --mca btl tcp,self --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo "${ompi_bind[@]}" \
        "${mca[@]}" "${wrap[@]}" "${cmd[@]}"
    fi
  fi >"$log" 2>&1 || { echo "$PROG: $impl $bench at $n ranks failed; see $log" >&2; return 1; }
  sed "s/^{/{\"series\":\"$impl\",\"where\":\"$where\",/" "$json" >>"$out/results.jsonl"
}

rc=0
for n in "${rank_list[@]}"; do
  for bench in bcast allgather; do
    for impl in mccl-inline mccl-thread ompi-default ompi-best; do run "$n" "$bench" "$impl" || rc=1; done
  done
done
sweep_machine_end "$out/machine.txt"

/usr/bin/python3 "$HERE/latency_report.py" "$out"
exit $rc
