#!/usr/bin/env bash
# The application's CPU per GiB allgathered, host-thread engine against the
# offload engine, on the namespace cluster (tests/fabric/cluster.sh): HOSTS
# hosts, 1 Gbit/s TBF both ways, MTU 1500, one rank per host and, under the
# offload engine, one mccl_offloadd per host (started by the first rank).
#
#   bench/offload/run.sh [--build DIR] [--hosts N] [--bytes M] [--iters N] [--reps R]
#
# Configurations: thread, offload (the daemon stages and copies with
# process_vm_*), offload+shm (buffers from Communicator::allocate: zero
# copy). Prints every rank's offload_cpu line, then one summary line per
# configuration and repetition: the mean application CPU per GiB over ranks and the slowest
# rank's time per allgather. Needs root (exit 77 otherwise). Cleans up its
# cluster on every exit.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$root/build hosts=4 bytes=$((4 << 20)) iters=20 reps=3
while (($#)); do
  case $1 in
    --build) build=$2; shift 2 ;;
    --hosts) hosts=$2; shift 2 ;;
    --bytes) bytes=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    *) echo "usage: $0 [--build DIR] [--hosts N] [--bytes M] [--iters N] [--reps R]" >&2; exit 2 ;;
  esac
done
[[ $(id -u) -eq 0 ]] || { echo "skip: needs root for network namespaces"; exit 77; }
bench=$build/bench/offload/offload_cpu
[[ -x $bench ]] || { echo "build offload_cpu first: $bench" >&2; exit 1; }
cluster=$root/tests/fabric/cluster.sh launch=$root/tests/fabric/launch.sh
name=offb$$
tmp=$(mktemp -d)
# The daemons' sockets carry the cluster's name (MCCL_OFFLOAD_JOB) so that
# `cluster.sh down` removes what its kill of stray processes leaves.
trap '"$cluster" down --name "$name" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
"$cluster" up --name "$name" --hosts "$hosts" --rate 1gbit --mtu 1500

for ((rep = 1; rep <= reps; rep++)); do
  # Alternate the order so that a drift in the machine's load favours none.
  # offload+shm: buffers from Communicator::allocate (zero copy).
  configs=(thread offload offload+shm)
  ((rep % 2 == 0)) && configs=(offload+shm offload thread)
  for config in "${configs[@]}"; do
    engine=${config%+shm}
    shm=()
    [[ $config == *+shm ]] && shm=(--shm)
    out=$tmp/$config.$rep
    "$launch" --name "$name" --hosts "$hosts" --timeout 300 --env MCCL_PROGRESS=$engine \
      --env MCCL_OFFLOAD_DAEMON="$build/src/offload/mccl_offloadd" \
      --env MCCL_OFFLOAD_LOG="$tmp/offloadd.log" --env MCCL_OFFLOAD_JOB="$name" \
      -- "$bench" --bytes "$bytes" --iters "$iters" "${shm[@]}" --stats >"$out" 2>&1 || {
      cat "$out"; echo "run failed: $config rep $rep" >&2; exit 1; }
    grep -v '"bench"' "$out"
    awk -v e="$config" -v rep=$rep '/ offload_cpu rank=/ {
        for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
        n++; cpu += v["cpu_s_per_gib"]; d += v["daemon_cpu_s"]
        if (v["per_op_s"] > t) t = v["per_op_s"] }
      END { printf "summary engine=%s rep=%d ranks=%d app_cpu_s_per_gib=%.4f slowest_per_op_s=%.5f daemon_cpu_s_mean=%.4f\n",
              e, rep, n, cpu / n, t, d / n }' "$out"
  done
done
