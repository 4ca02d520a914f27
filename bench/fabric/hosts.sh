#!/usr/bin/env bash
# hosts.sh — several ranks per host: MPI_Bcast and MPI_Allgather of an unmodified
# program (mpi_coll_bench.c) under plain Open MPI, libmccl_mpi's flat scheme (every
# rank joins the multicast group), its leaders scheme (one rank per host in MCCL,
# MPI inside the host) and auto (both, each call to the faster; --schemes ...,auto),
# on the namespace cluster (tests/fabric/cluster.sh).
#
#   sudo bench/fabric/hosts.sh --hosts H --per-host K --out DIR [--rate 1gbit]
#        [--sizes MIN:MAX] [--iters N] [--schemes ompi,flat,leaders,auto]
#        [--benches bcast,allgather] [--build-dir DIR]
#
# Ranks: H*K, K consecutive ranks per host namespace (launch.sh --mpirun --ranks
# --placement block), Open MPI over TCP (inside a host over the namespace's
# loopback, never across a veth). Links rate-limited both ways, MTU 1500, no RPS.
# Per case mpi_coll_bench prints (rank 0) and appends to DIR/results.jsonl:
# p50_max_us (per iteration the slowest rank, median), avg_us, and from 3 more
# calls back to back the bytes each host's veth0 sent and received per call (the
# largest over hosts; the ranks of a host read the same counters). Every
# iteration's data is checked (-c). DIR/summary.txt has one line per case, with
# the load average before each run. Exit: 0 done, 1 error, 2 usage, 77 not root.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
FABRIC=$REPO/tests/fabric

hosts="" per_host="" out="" rate=1gbit sizes=65536:4194304 iters=8
schemes="ompi flat leaders" benches="bcast allgather" build=$REPO/build
while (($#)); do
  case $1 in
    --hosts) hosts=$2; shift 2 ;;
    --per-host) per_host=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --schemes) schemes=$(tr ',' ' ' <<<"$2"); shift 2 ;;
    --benches) benches=$(tr ',' ' ' <<<"$2"); shift 2 ;;
    --build-dir) build=$2; shift 2 ;;
    *) echo "hosts.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[[ $hosts =~ ^[0-9]+$ && $per_host =~ ^[0-9]+$ && -n $out ]] || {
  echo "usage: hosts.sh --hosts H --per-host K --out DIR [...]" >&2
  exit 2
}
[[ $(id -u) -eq 0 ]] || { echo "hosts.sh: SKIP: must run as root" >&2; exit 77; }
lib=$build/src/mpi/libmccl_mpi.so
[[ -e $lib ]] || { echo "hosts.sh: $lib is missing (build first)" >&2; exit 1; }

mkdir -p "$out/logs"
mpicc.openmpi -O2 -o "$out/mpi_coll_bench" "$HERE/mpi_coll_bench.c"
name="hb$(($$ % 100000))$((RANDOM % 100))"
trap '"$FABRIC/cluster.sh" down --name "$name" >/dev/null 2>&1 || true' EXIT
"$FABRIC/cluster.sh" up --name "$name" --hosts "$hosts" --rate "$rate" --rate-side both --mtu 1500

ranks=$((hosts * per_host))
for bench in $benches; do
  for scheme in $schemes; do
    pre=()
    [[ $scheme == ompi ]] || pre=(env "LD_PRELOAD=$lib" "MCCL_MPI_HIERARCHY=$scheme")
    load=$(cut -d' ' -f1-3 /proc/loadavg)
    log=$out/logs/$bench.$scheme.h$hosts.k$per_host.log
    rc=0
    "$FABRIC/launch.sh" --mpirun --name "$name" --hosts "$hosts" --ranks "$ranks" \
      --placement block --timeout 300 -- "${pre[@]}" "$out/mpi_coll_bench" -b "$bench" \
      -m "$sizes" -i "$iters" -x 2 -c --impl "$scheme" --json "$out/results.jsonl" \
      --netdev veth0 --traffic-iters 3 >"$log" 2>&1 || rc=$?
    echo "$bench $scheme hosts=$hosts per_host=$per_host rc=$rc load=[$load]" | tee -a "$out/summary.txt"
  done
done
/usr/bin/python3 - "$out/results.jsonl" "$hosts" "$per_host" <<'EOF' | tee -a "$out/summary.txt"
import json, sys
path, hosts, k = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rows = [json.loads(l) for l in open(path) if l.strip()]
rows = [r for r in rows if r["ranks"] == hosts * k]
print(f"{'bench':10} {'impl':8} {'bytes':>8} {'p50_max_ms':>10} {'avg_ms':>8} {'tx_MB/host':>10} {'rx_MB/host':>10} ok")
for r in rows:
    print(f"{r['bench']:10} {r['impl']:8} {r['bytes_per_rank']:>8} {r['p50_max_us']/1e3:>10.2f} "
          f"{r['avg_us']/1e3:>8.2f} {r.get('tx_bytes_max', 0)/1e6:>10.3f} {r.get('rx_bytes_max', 0)/1e6:>10.3f} "
          f"{r['validated']}")
EOF
