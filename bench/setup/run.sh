#!/usr/bin/env bash
# run.sh — what a communicator costs each process as N grows, on this host:
# N processes launched by mccl_run (TCP store bootstrap, UDP multicast on lo,
# the TCP reliable transport), each running bench/setup/setup_worker.
#
#   bench/setup/run.sh [--ranks "4 16 64 128 256"] [--reps R] [--out DIR]
#                      [--timeout S] [--build-dir DIR] [-x NAME=VALUE]...
#                      [--cluster NAME]
#
# --cluster NAME: one rank per host namespace of a cluster made by
# tests/fabric/cluster.sh (up with at least max(--ranks) hosts), launched by
# tests/fabric/launch.sh instead of mccl_run (needs root).
# Per rank the worker reports (one JSON line) its bootstrap and creation
# times, and, after one loss-free broadcast (64 KiB) and allgather (4 KiB per
# rank) with the communicator alive, its open descriptors (/proc/self/fd),
# the established TCP connections among them, VmRSS and VmHWM. Per run this
# script reports:
#   create_s    the job's creation: the last rank's communicator created
#               minus the first rank's process start (CLOCK_MONOTONIC, one
#               clock for the host), launch and bootstrap included
#   boot_ms     the slowest rank's bootstrap (joining the store, all arrived)
#   comm_ms     the slowest rank's communicator creation after its bootstrap
#   fds_max / fds_med / fds_r0   descriptors: the most, the median, rank 0's
#   tcp_max     established TCP connections of the process that holds most
#   rss_med_kb / rss_max_kb      resident memory per rank after the collectives
#   launch_s    mccl_run's wall time, start to the last exit
#   load1       the 1-minute load average when the run started
# Output: DIR/results.jsonl (one line per run), DIR/machine.txt, the ranks'
# lines in DIR/raw/N-REP.jsonl, and a table on stdout. N beyond the
# descriptor limit (ulimit -n) of this shell is skipped with a reason.
# Run it on a quiet machine (timings); the counts do not depend on load.
# Exit: 0 done (failed runs have ok=false), 1 error, 2 usage.
set -euo pipefail

ranks="4 16 64 128 256"
reps=1
out=""
timeout_s=300
build=""
extra=()
cluster=""
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"

usage() { sed -n '2,36p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --ranks) ranks="$2"; shift 2 ;;
    --reps) reps="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --timeout) timeout_s="$2"; shift 2 ;;
    --build-dir) build="$2"; shift 2 ;;
    -x) extra+=(-x "$2"); shift 2 ;;
    --cluster) cluster="$2"; shift 2 ;;
    -h|--help) usage ;;
    *) echo "run.sh: unknown argument $1" >&2; usage ;;
  esac
done
build="${build:-$root/build}"
out="${out:-$(mktemp -d /tmp/mccl-setup-bench.XXXXXX)}"
run="$build/tools/mccl_run"
worker="$build/bench/setup/setup_worker"
for f in "$run" "$worker"; do
  [[ -x "$f" ]] || { echo "run.sh: $f is not built (ninja -C $build mccl_run setup_worker)" >&2; exit 1; }
done
mkdir -p "$out/raw"
: > "$out/results.jsonl"
{
  echo "date: $(date -u +%FT%TZ)"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
  echo "nproc: $(nproc)"
  echo "kernel: $(uname -r)"
  echo "git: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "loadavg at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "ulimit -n: $(ulimit -n)"
  echo "command: $0 --ranks \"$ranks\" --reps $reps ${extra[*]:-}${cluster:+ --cluster $cluster}"
  [[ -z $cluster ]] || echo "cluster: $cluster, link rate $("$root/tests/fabric/cluster.sh" rate --name "$cluster" | head -1) Mbit/s"
} > "$out/machine.txt"

for n in $ranks; do
  # mccl_run itself holds pipes per rank; rank 0's store a connection per
  # rank while the job is created.
  if (( 3 * n + 64 > $(ulimit -n) )); then
    echo "run.sh: skipping N=$n: needs about $((3 * n + 64)) descriptors, ulimit -n is $(ulimit -n)" >&2
    continue
  fi
  for ((rep = 0; rep < reps; rep++)); do
    raw="$out/raw/$n-$rep.jsonl"
    load1="$(cut -d' ' -f1 /proc/loadavg)"
    t0=$(date +%s.%N)
    rc=0
    if [[ -n $cluster ]]; then
      envs=()
      for ((i = 1; i < ${#extra[@]}; i += 2)); do envs+=(--env "${extra[i]}"); done
      "$root/tests/fabric/launch.sh" --name "$cluster" --hosts "$n" --timeout "$timeout_s" \
        "${envs[@]}" -- "$worker" 2> "$out/raw/$n-$rep.err" | tee "$out/raw/$n-$rep.log" |
        sed -n 's/^\[h[0-9]*\] \({.*\)$/\1/p' > "$raw" || rc=$?
    else
      "$run" -n "$n" -t "$timeout_s" "${extra[@]}" "$worker" > "$raw" 2> "$out/raw/$n-$rep.err" || rc=$?
    fi
    t1=$(date +%s.%N)
    python3 - "$raw" "$n" "$rep" "$rc" "$load1" "$t0" "$t1" >> "$out/results.jsonl" <<'EOF'
import json, statistics, sys
raw, n, rep, rc, load1, t0, t1 = sys.argv[1:]
rs = [json.loads(l) for l in open(raw) if l.startswith("{")]
n = int(n)
ok = int(rc) == 0 and len(rs) == n and all(r["validated"] for r in rs)
res = {"bench": "setup", "n": n, "rep": int(rep), "ok": ok, "rc": int(rc),
       "ranks_reported": len(rs), "load1": float(load1),
       "launch_s": round(float(t1) - float(t0), 3)}
if rs:
    fds = [r["fds"] for r in rs]
    res.update({
        "create_s": round(max(r["created_at"] for r in rs) - min(r["started_at"] for r in rs), 3),
        "boot_ms": round(max(r["bootstrap_ms"] for r in rs), 1),
        "comm_ms": round(max(r["create_ms"] for r in rs), 1),
        "fds_max": max(fds), "fds_med": statistics.median(fds),
        "fds_r0": next((r["fds"] for r in rs if r["rank"] == 0), -1),
        "tcp_max": max(r["tcp"] for r in rs),
        "rss_med_kb": statistics.median(r["rss_kb"] for r in rs),
        "rss_max_kb": max(r["rss_kb"] for r in rs),
        "hwm_max_kb": max(r["hwm_kb"] for r in rs)})
print(json.dumps(res))
EOF
  done
done

python3 - "$out/results.jsonl" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("# MCCL set-up cost per process")
print(f"{'N':>5} {'ok':>3} {'create_s':>9} {'boot_ms':>8} {'comm_ms':>8} {'fds_max':>8} "
      f"{'fds_r0':>7} {'tcp_max':>8} {'rss_med_kB':>11} {'rss_max_kB':>11} {'load1':>6}")
for r in rows:
    if "create_s" not in r:
        print(f"{r['n']:>5} {'no':>3}  (rc {r['rc']}, {r['ranks_reported']} ranks reported)")
        continue
    print(f"{r['n']:>5} {'yes' if r['ok'] else 'no':>3} {r['create_s']:>9.3f} {r['boot_ms']:>8.1f} "
          f"{r['comm_ms']:>8.1f} {r['fds_max']:>8} {r['fds_r0']:>7} {r['tcp_max']:>8} "
          f"{r['rss_med_kb']:>11.0f} {r['rss_max_kb']:>11} {r['load1']:>6.2f}")
EOF
echo "results: $out/results.jsonl" >&2
