#!/usr/bin/env bash
# mpi_crossover.sh — measures, per collective and team size, from which message
# size libmccl_mpi under an unmodified MPI program is faster than the MPI
# underneath, and prints the rows of src/mpi/min_bytes.h (MCCL_MPI_MIN_BYTES=auto).
#
#   bench/tune/mpi_crossover.sh --out DIR [--ranks 2,4] [--rate 10gbit]
#        [--benches bcast,allgather,allreduce,reduce_scatter] [--max-size S]
#        [--repeat K] [-i ITER] [-x WARMUP] [--timeout S] [--build-dir DIR]
#
# On the namespace cluster of tests/fabric/cluster.sh (root; one host per rank,
# links limited to --rate, default 10gbit so that wire time is small and MPI's
# point-to-point algorithms look their best; RPS on), for every team size and
# collective it runs bench/fabric/mpi_coll_bench under Open MPI (btl tcp) twice,
# every size from 4 B to --max-size (default 1m) in powers of two: once plain
# ("mpi") and once with LD_PRELOAD=libmccl_mpi.so and MCCL_MPI_MIN_BYTES=0, so
# that libmccl_mpi serves every size ("mccl"). The crossover (bench/tune/crossover.py)
# is the smallest size from which MCCL's p50_max_us (per iteration the slowest
# rank, median over iterations) is below MPI's at that size and every larger one;
# 2*--max-size when it never is. --repeat K (default 3) runs each pair K times,
# alternating the two, and takes each size's median: on a shared machine one
# run's figures flip around 1x from run to run. It is given in the bytes libmccl_mpi compares with
# its threshold: a broadcast's message, an allreduce's vector, an allgather's or
# reduce-scatter's whole result (ranks x the block mpi_coll_bench's sizes name).
# Output: DIR/results.jsonl (the program's JSON lines plus "algo"), DIR/table.txt
# (also printed), DIR/rows.txt (the rows for src/mpi/min_bytes.h), DIR/machine.txt
# (CPU, load average at start and end, commit, command), DIR/logs/.
# Exit: 0 done, 1 a run failed, 2 usage, 77 not root / tools missing.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
FABRIC=$REPO/tests/fabric
PROG=tune/mpi_crossover.sh
# shellcheck source=scripts/lib/cli.sh
source "$REPO/scripts/lib/cli.sh"
# shellcheck source=scripts/lib/sweep.sh
source "$REPO/scripts/lib/sweep.sh"

orig_args=("$@")
out="" ranks="2,4" rate=10gbit repeat=3 max_size=1048576 iters=200 warmup=20 tmo=600
benches="bcast allgather allreduce reduce_scatter"
build="$REPO/build"
while (($#)); do
  case $1 in
    --out) out=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --benches) benches=$(list_of "$2"); shift 2 ;;
    --max-size) max_size=$(size_of "$2"); shift 2 ;;
    -i) iters=$2; shift 2 ;;
    -x) warmup=$2; shift 2 ;;
    --timeout) tmo=$2; shift 2 ;;
    --build-dir) build=$(cd "$2" && pwd); shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) usage_die "unknown argument '$1'" ;;
  esac
done
[[ -n $out ]] || usage_die "--out DIR is required"
[[ $repeat =~ ^[1-9][0-9]*$ ]] || usage_die "bad --repeat '$repeat'"
sweep_ranks "$ranks"
for b in $benches; do
  [[ $b =~ ^(bcast|allgather|allreduce|reduce_scatter)$ ]] || usage_die "bad bench '$b'"
done
command -v mpicc.openmpi >/dev/null || skip "Open MPI (mpicc.openmpi) is not installed"
lib=$build/src/mpi/libmccl_mpi.so
[[ -e $lib ]] || die "$lib does not exist (build the mccl_mpi target)"
mkdir -p "$out/logs" "$out/bin"
: >"$out/results.jsonl"
mpicc.openmpi -O2 -o "$out/bin/mpi_coll_bench" "$REPO/bench/fabric/mpi_coll_bench.c"
sweep_machine "$out/machine.txt" "namespace cluster, $rate links, RPS on" "$0" "${orig_args[@]}"
sweep_cluster mxo "$rate"

# run N BENCH ALGO K: one mpirun, every size; JSON lines to results.jsonl.
run() {
  local n=$1 bench=$2 algo=$3 k=$4
  local json=$out/logs/$bench-n$n-$algo-$k.json log=$out/logs/$bench-n$n-$algo-$k.log pre=()
  [[ $algo == mccl ]] && pre=(env "LD_PRELOAD=$lib" MCCL_MPI_MIN_BYTES=0)
  rm -f "$json"
  "$FABRIC/launch.sh" --mpirun --name "$cluster_name" --hosts "$n" --timeout "$tmo" -- "${pre[@]}" \
    "$out/bin/mpi_coll_bench" -b "$bench" -m "4:$max_size" -i "$iters" -x "$warmup" -c \
    --impl "$algo" --json "$json" >"$log" 2>&1 ||
    { echo "$PROG: $bench at $n ranks ($algo) failed; see $log" >&2; return 1; }
  sed "s/^{/{\"algo\":\"$algo\",/" "$json" >>"$out/results.jsonl"
}

rc=0
for n in "${rank_list[@]}"; do
  for b in $benches; do
    for ((k = 1; k <= repeat; k++)); do
      run "$n" "$b" mpi "$k" || rc=1
      run "$n" "$b" mccl "$k" || rc=1
    done
  done
done
sweep_machine_end "$out/machine.txt"

python3 "$HERE/crossover.py" "$out/results.jsonl" --baseline mpi --candidate mccl \
  --benches "$(tr ' ' , <<<"$benches")" --whole-result allgather,reduce_scatter \
  --max-size "$max_size" --out "$out"
exit $rc
