#!/usr/bin/env bash
# run.sh — unpaced broadcast throughput on the loopback interface: one root sends
# SIZE bytes to one receiver, 2 processes on this host, MCCL next to Open MPI.
#
#   bench/loopback/run.sh --out DIR [--size S] [-i|--iters I] [-x|--warmup W]
#        [--impls mccl,ompi-default,ompi-best] [--reps R]
#        [--variant NAME:K=V[,K=V...]]... [--mccl-env K=V]... [--osu-arg ARG]...
#        [--label NAME] [--timeout S] [--build-dir DIR]
#
# Every rep runs each implementation once, in turn (so that noise shows as a spread,
# not as a bias against one of them):
#   mccl          build/tools/mccl_run -n 2 build/bench/osu/mccl_osu_bcast -m S:S
#                 -i I -x W -c -u 0 --json, with MCCL_UDP_RATE_MBIT=0 (unpaced),
#                 MCCL_UDP_IFACE=lo and MCCL_COLL_BCAST_ALGO=multicast (what this
#                 measures is one core's multicast rate; at 2 ranks on one host the
#                 algorithm table would send over TCP instead: docs/algorithms.md),
#                 then every --mccl-env, then the variant's K=V
#                 (later ones win), and every --osu-arg on its command line
#                 (--osu-arg --shared-buffers: buffers from Communicator::allocate,
#                 which the offload engine's daemon uses in place). Each --variant is one MCCL run per rep, named NAME;
#                 without --variant one run named "default". E.g. GSO off and on in
#                 one call: --variant gso_off:MCCL_UDP_GSO=off --variant gso_on:MCCL_UDP_GSO=on
#   ompi-default  bench/fabric/mpi_coll_bench.c (built into DIR/bin with mpicc.openmpi)
#                 -b bcast under mpirun.openmpi -n 2 --mca pml ob1 --mca btl tcp,self
#                 --mca btl_tcp_if_include lo (TCP over loopback, no shared memory);
#   ompi-best     the same with bench/fabric/run.sh's best broadcast pinned: the
#                 pipelined chain with 128 KiB segments (coll_tuned_bcast_algorithm 3).
# Both programs time each broadcast between barriers on every rank; the figure is
# p50_max_us (per iteration the slowest rank, median over iterations), and
# Gbit/s = SIZE * 8 / p50_max_us / 1000 (payload bits over one broadcast's time).
# Every iteration's data is checked (-c). Beside each figure: each side's CPU seconds
# per GB broadcast (the programs' cpu_s_per_gb: user and system time of every thread
# of the root, rank 0, and of the receiver, rank 1, inside the timed broadcasts; on
# loopback the kernel's receive work runs partly in the sender's system time; under
# MCCL_PROGRESS=offload the daemon's time is not in it, and the summary marks those
# figures with '*'), and the
# physical limit: one core's memcpy bandwidth for SIZE bytes (bench/loopback/memcpy_bw.c,
# measured before and after the reps; the summary uses their mean) and each
# implementation's fraction of it (payload bytes per second over memcpy's).
#
# Output: DIR/results.jsonl (one line per run: impl, variant, label, rep, bytes,
# p50_max_us, gbit_s, cpu_s_per_gb_root, cpu_s_per_gb_receiver, validated, rc, load1
# at the start of the run, ...), DIR/memcpy.jsonl (memcpy_bw's two lines),
# DIR/summary.txt (also printed: per impl and variant the median Gbit/s over reps and
# min..max), DIR/machine.txt (date, nproc, kernel, loadavg at start and end, git rev,
# command), DIR/raw/*.json (the programs' JSON lines), DIR/logs/*.log.
# Sizes accept k/m suffixes (KiB, MiB); defaults: --size 16m, -i 30, -x 5, --reps 3,
# --timeout 120 (seconds per launch; the launch is killed after it).
# Traffic stays on lo (MCCL's bootstrap on 127.0.0.1, UDP multicast on lo, Open MPI's
# TCP on lo). Every process started carries MCCL_LOOPBACK_RUN_ID; after each launch
# and on exit any such process left is killed by PID. Run it on a quiet machine: it
# measures CPU-bound throughput, so any other load shows (see load1).
# Exit: 0 done (failed runs have rc != 0 or validated false in results.jsonl),
# 1 error, 2 usage, 77 tools missing (SKIP).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
PROG=loopback/run.sh

# shellcheck source=scripts/lib/cli.sh
source "$REPO/scripts/lib/cli.sh"
# A size of 0 has nothing to measure here.
positive_size() {
  local v
  v=$(size_of "$1")
  ((v > 0)) || usage_die "bad size '$1'"
  echo "$v"
}
is_count() { [[ $1 =~ ^[0-9]+$ ]] && ((10#$1 >= $2)); }

orig_args=("$@")
out="" size=16777216 iters=30 warmup=5 reps=3 tmo=120 label=""
impls="mccl ompi-default ompi-best" build="$REPO/build"
mccl_env=() variants=() osu_args=()
while (($#)); do
  case $1 in
    -h | --help) usage; exit 0 ;;
    --out) out=${2-}; shift 2 ;;
    --size) size=$(positive_size "${2-}"); shift 2 ;;
    -i | --iters) iters=${2-}; shift 2 ;;
    -x | --warmup) warmup=${2-}; shift 2 ;;
    --impls) impls=$(tr ',' ' ' <<<"${2-}"); shift 2 ;;
    --reps) reps=${2-}; shift 2 ;;
    --variant) variants+=("${2-}"); shift 2 ;;
    --mccl-env) mccl_env+=("${2-}"); shift 2 ;;
    --osu-arg) osu_args+=("${2-}"); shift 2 ;;
    --label) label=${2-}; shift 2 ;;
    --timeout) tmo=${2-}; shift 2 ;;
    --build-dir) build=${2-}; shift 2 ;;
    *) usage_die "unknown argument '$1'" ;;
  esac
done

[[ -n $out ]] || usage_die "--out DIR is required"
is_count "$iters" 1 || usage_die "bad -i '$iters' (>= 1)"
is_count "$warmup" 0 || usage_die "bad -x '$warmup' (>= 0)"
is_count "$reps" 1 || usage_die "bad --reps '$reps' (>= 1)"
is_count "$tmo" 20 || usage_die "bad --timeout '$tmo' (>= 20 seconds)"
((size <= 2147483647)) || usage_die "--size must be below 2 GiB (MPI counts are int)"
[[ -z $label || $label =~ ^[A-Za-z0-9_.-]+$ ]] || usage_die "bad --label '$label' ([A-Za-z0-9_.-])"
for i in $impls; do [[ $i =~ ^(mccl|ompi-default|ompi-best)$ ]] || usage_die "bad impl '$i'"; done
[[ -n ${impls// /} ]] || usage_die "--impls is empty"
for kv in "${mccl_env[@]}"; do [[ $kv =~ ^MCCL_[A-Z0-9_]+= ]] || usage_die "bad --mccl-env '$kv' (MCCL_NAME=VALUE)"; done
# Variants: NAME:K=V,K=V -> names in vnames, env lists ("K=V K=V") in venvs.
vnames=() venvs=()
for v in "${variants[@]}"; do
  vn=${v%%:*}
  [[ $vn =~ ^[A-Za-z0-9_.-]+$ ]] || usage_die "bad --variant '$v' (NAME:K=V[,K=V...], NAME [A-Za-z0-9_.-])"
  vl=""
  if [[ $v == *:* && -n ${v#*:} ]]; then
    IFS=, read -r -a kvs <<<"${v#*:}"
    for kv in "${kvs[@]}"; do
      [[ $kv =~ ^MCCL_[A-Z0-9_]+=[^[:space:]]*$ ]] || usage_die "bad setting '$kv' in --variant '$v' (MCCL_NAME=VALUE)"
      vl+=" $kv"
    done
  fi
  for seen in "${vnames[@]}"; do [[ $seen != "$vn" ]] || usage_die "--variant $vn given twice"; done
  vnames+=("$vn")
  venvs+=("${vl# }")
done
if ((${#vnames[@]} == 0)); then vnames=(default); venvs=(""); fi

for t in timeout awk sort cc; do command -v "$t" >/dev/null 2>&1 || skip "missing tool: $t (coreutils, gawk/mawk, build-essential)"; done
if [[ " $impls " == *" ompi"* ]]; then
  for t in mpicc.openmpi mpirun.openmpi; do
    command -v "$t" >/dev/null 2>&1 || skip "missing $t: apt-get install openmpi-bin libopenmpi-dev (or --impls mccl)"
  done
fi
if [[ " $impls " == *" mccl "* ]]; then
  for b in tools/mccl_run bench/osu/mccl_osu_bcast; do
    [[ -x $build/$b ]] || skip "$build/$b missing: build MCCL first (cmake --build $build) or pass --build-dir DIR"
  done
fi

[[ ! -s $out/results.jsonl ]] || die "$out/results.jsonl exists: pick a new --out DIR (nothing is overwritten)"
mkdir -p "$out/raw" "$out/logs" "$out/bin"
out=$(cd "$out" && pwd)
[[ ! -d $build ]] || build=$(cd "$build" && pwd)
results=$out/results.jsonl
run_id="lb$$-$(date +%s%N)"

# kill_strays: every process still carrying this run's id (never this script).
kill_strays() {
  local f pid strays=()
  while IFS= read -r f; do
    pid=${f#/proc/}
    pid=${pid%/environ}
    [[ $pid == "$$" || $pid == "$BASHPID" ]] || strays+=("$pid")
  done < <(grep -lzxF "MCCL_LOOPBACK_RUN_ID=$run_id" /proc/[0-9]*/environ 2>/dev/null || true)
  if ((${#strays[@]})); then
    echo "$PROG: killing stray processes ${strays[*]}" >&2
    kill -KILL "${strays[@]}" 2>/dev/null || true
  fi
}
trap kill_strays EXIT
trap 'echo "$PROG: interrupted" >&2; exit 130' INT TERM HUP

if [[ " $impls " == *" ompi"* ]]; then
  mpicc.openmpi -O2 -o "$out/bin/mpi_coll_bench" "$REPO/bench/fabric/mpi_coll_bench.c" ||
    die "mpicc.openmpi failed to build bench/fabric/mpi_coll_bench.c"
fi
cc -O2 -o "$out/bin/memcpy_bw" "$REPO/bench/loopback/memcpy_bw.c" ||
  die "cc failed to build bench/loopback/memcpy_bw.c"
memcpy_file=$out/memcpy.jsonl
"$out/bin/memcpy_bw" "$size" >>"$memcpy_file" || die "memcpy_bw failed"

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(uname -srm), nproc $(nproc), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
  echo "memory: $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)"
  echo "mccl: $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)$(
    [[ -n $(git -C "$REPO" status --porcelain --untracked-files=no 2>/dev/null) ]] && echo " (working tree differs)")"
  echo "mccl binaries: $build ($(stat -c '%y' "$build/bench/osu/mccl_osu_bcast" 2>/dev/null | cut -d. -f1 || echo none))"
  echo "open mpi: $(mpirun.openmpi --version 2>/dev/null | head -1 || echo none)"
  echo "size: $size bytes, iterations $iters, warmup $warmup, reps $reps"
  echo "variants: $(for k in "${!vnames[@]}"; do printf '%s=[%s] ' "${vnames[k]}" "${venvs[k]}"; done)"
  echo "mccl env: MCCL_UDP_RATE_MBIT=0 MCCL_UDP_IFACE=lo MCCL_COLL_BCAST_ALGO=multicast ${mccl_env[*]}"
  echo "osu args: ${osu_args[*]}"
  echo "loadavg at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "command: $0 ${orig_args[*]}"
} >"$out/machine.txt"

# json_list ARGS...: ["a","b",...]
json_list() {
  local s="" a
  for a in "$@"; do s+="\"${a//\"/\\\"}\","; done
  echo "[${s%,}]"
}

mpi_common=(--allow-run-as-root -n 2 --mca pml ob1 --mca btl "tcp,self" --mca btl_tcp_if_include lo
  --mca oob_tcp_if_include lo)
(($(nproc) >= 2)) || mpi_common+=(--oversubscribe)
best_mca=(--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_bcast_algorithm 3
  --mca coll_tuned_bcast_algorithm_segmentsize 131072)

# run_one IMPL VARIANT VENV REP: one launch, one line in results.jsonl.
run_one() {
  local impl=$1 variant=$2 venv=$3 rep=$4
  local tag="$impl${variant:+-$variant}${label:+-$label}-r$rep"
  local raw=$out/raw/$tag.json log=$out/logs/$tag.log
  local cmd=() envs=() kv
  rm -f "$raw"
  if [[ $impl == mccl ]]; then
    envs=("MCCL_UDP_RATE_MBIT=0" "MCCL_UDP_IFACE=lo" "MCCL_COLL_BCAST_ALGO=multicast" "${mccl_env[@]}")
    # shellcheck disable=SC2206  # venv is "K=V K=V" of checked tokens without spaces
    [[ -z $venv ]] || envs+=($venv)
    cmd=("$build/tools/mccl_run" -n 2 -t "$((tmo - 10))")
    for kv in "${envs[@]}" "MCCL_LOOPBACK_RUN_ID=$run_id"; do cmd+=(-x "$kv"); done
    cmd+=("$build/bench/osu/mccl_osu_bcast" -m "$size:$size" -i "$iters" -x "$warmup" -c -u 0 --json "$raw"
      "${osu_args[@]}")
  else
    cmd=(mpirun.openmpi "${mpi_common[@]}" -x "MCCL_LOOPBACK_RUN_ID=$run_id")
    [[ $impl != ompi-best ]] || cmd+=("${best_mca[@]}")
    cmd+=("$out/bin/mpi_coll_bench" -b bcast -m "$size:$size" -i "$iters" -x "$warmup" -c --impl "$impl" --json "$raw")
  fi
  local load rc=0 t0 t1
  load=$(cut -d' ' -f1 /proc/loadavg)
  t0=$EPOCHREALTIME
  {
    echo "# $(date -u +%H:%M:%S) load $load"
    echo "# MCCL_LOOPBACK_RUN_ID=$run_id timeout -k 5 $tmo ${cmd[*]}"
  } >"$log"
  MCCL_LOOPBACK_RUN_ID=$run_id timeout -k 5 "$tmo" "${cmd[@]}" </dev/null >>"$log" 2>&1 || rc=$?
  t1=$EPOCHREALTIME
  kill_strays
  local p50="" validated=null cpu_root=null cpu_recv=null cpus
  if [[ -s $raw ]]; then
    p50=$(sed -n 's/.*"p50_max_us":\([0-9.eE+-]*\).*/\1/p' "$raw" | tail -1)
    validated=$(sed -n 's/.*"validated":\([a-z]*\).*/\1/p' "$raw" | tail -1)
    [[ -n $validated ]] || validated=null
    cpus=$(sed -n 's/.*"cpu_s_per_gb":\[\([0-9.eE+,-]*\)\].*/\1/p' "$raw" | tail -1)
    if [[ $cpus == *,* ]]; then
      cpu_root=${cpus%%,*}
      cpu_recv=${cpus#*,}
      cpu_recv=${cpu_recv%%,*}
    fi
  fi
  local gbps=null
  if [[ -n $p50 ]]; then
    gbps=$(awk -v m="$size" -v t="$p50" 'BEGIN { if (t > 0) printf "%.3f", m * 8 / t / 1000; else print "null" }')
  else
    p50=null
  fi
  printf '{"impl":"%s","variant":"%s","label":"%s","rep":%d,"bytes":%d,"iterations":%d,"warmup":%d,"p50_max_us":%s,"gbit_s":%s,"cpu_s_per_gb_root":%s,"cpu_s_per_gb_receiver":%s,"validated":%s,"rc":%d,"load1":%s,"wall_s":%s,"env":%s,"raw":"%s","log":"%s"}\n' \
    "$impl" "$variant" "$label" "$rep" "$size" "$iters" "$warmup" "$p50" "$gbps" "$cpu_root" "$cpu_recv" "$validated" "$rc" "$load" \
    "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')" \
    "$(if [[ $impl == mccl ]]; then json_list "${envs[@]}"; else json_list; fi)" \
    "raw/$tag.json" "logs/$tag.log" >>"$results"
  printf '%-13s %-12s rep %d: rc %d, load %s, p50 %s us, %s Gbit/s%s\n' "$impl" "${variant:--}" "$rep" "$rc" \
    "$load" "$p50" "$gbps" "$([[ $validated == true ]] || echo ", validated $validated")" >&2
}

echo "$PROG: $size bytes, $reps reps of: $impls (mccl variants: ${vnames[*]}); results in $out" >&2
for ((rep = 1; rep <= reps; rep++)); do
  for impl in $impls; do
    if [[ $impl == mccl ]]; then
      for k in "${!vnames[@]}"; do run_one mccl "${vnames[k]}" "${venvs[k]}" "$rep"; done
    else
      run_one "$impl" "" "" "$rep"
    fi
  done
done
"$out/bin/memcpy_bw" "$size" >>"$memcpy_file" || die "memcpy_bw failed"
memcpy_gbyte_s=$(sed -n 's/.*"memcpy_gbyte_s":\([0-9.]*\).*/\1/p' "$memcpy_file" |
  awk '{ s += $1; n++ } END { if (n) printf "%.3f", s / n }')
{
  echo "loadavg at end: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "memcpy, one core, $size bytes: $(sed -n 's/.*"memcpy_gbyte_s":\([0-9.]*\).*/\1/p' "$memcpy_file" |
    paste -sd' ') GB/s (before, after the reps)"
} >>"$out/machine.txt"

# Summary: per impl/variant (in the order first run), median Gbit/s over the reps that
# gave a validated result, min..max, and how many failed.
awk -v size="$size" -v memcpy="$memcpy_gbyte_s" '
  function field(k,    r) {
    if (match($0, "\"" k "\":(\"[^\"]*\"|[^,}]*)")) {
      r = substr($0, RSTART + length(k) + 3, RLENGTH - length(k) - 3); gsub(/"/, "", r); return r
    }
    return ""
  }
  # median of the first m entries of arr[key, 1..m]
  function med(arr, key, m,    i, j, x, a) {
    for (i = 1; i <= m; i++) a[i] = arr[key, i]
    for (i = 2; i <= m; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
    lo = a[1]; hi = a[m]
    return (m % 2) ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
  }
  # The engine a run used: the last MCCL_PROGRESS in its env (later ones win).
  function engine(    rest, e) {
    rest = $0; e = ""
    while (match(rest, /MCCL_PROGRESS=[a-z]+/)) {
      e = substr(rest, RSTART + 14, RLENGTH - 14); rest = substr(rest, RSTART + RLENGTH)
    }
    return e
  }
  {
    key = field("impl") (field("variant") != "" ? "/" field("variant") : "")
    if (!(key in n)) { order[++nk] = key; n[key] = 0; bad[key] = 0; nc[key] = 0 }
    if (engine() == "offload") client_only[key] = 1
    g = field("gbit_s"); lab = field("label")
    if (field("rc") == "0" && field("validated") == "true" && g != "null" && g != "") {
      v[key, ++n[key]] = g + 0
      cr = field("cpu_s_per_gb_root"); cv = field("cpu_s_per_gb_receiver")
      if (cr != "null" && cr != "" && cv != "null" && cv != "") {
        nc[key]++; croot[key, nc[key]] = cr + 0; crecv[key, nc[key]] = cv + 0
      }
    } else bad[key]++
  }
  END {
    printf "broadcast of %d bytes, 2 ranks on loopback, unpaced%s; Gbit/s = payload bits / p50 of the slowest rank\n", size, (lab != "" ? ", label " lab : "")
    printf "one core'"'"'s memcpy of %d bytes: %.2f GB/s (%.1f Gbit/s); CPU s/GB: each side'"'"'s CPU seconds per GB broadcast (medians)\n", size, memcpy, memcpy * 8
    printf "%-28s %10s %21s %9s %9s %9s %6s %7s\n", "impl/variant", "median", "min..max", "/memcpy", "cpu root", "cpu recv", "reps", "failed"
    for (k = 1; k <= nk; k++) {
      key = order[k]; m = n[key]
      if (m == 0) { printf "%-28s %10s %21s %9s %9s %9s %6d %7d\n", key, "-", "-", "-", "-", "-", 0, bad[key]; continue }
      g = med(v, key, m); glo = lo; ghi = hi
      frac = memcpy > 0 ? sprintf("%.2f", g / 8 / memcpy) : "-"
      cr = nc[key] ? sprintf("%.3f", med(croot, key, nc[key])) : "-"
      cv = nc[key] ? sprintf("%.3f", med(crecv, key, nc[key])) : "-"
      if (key in client_only && nc[key]) { cr = cr "*"; cv = cv "*"; footnote = 1 }
      printf "%-28s %10.3f %10.3f..%-9.3f %9s %9s %9s %6d %7d\n", key, g, glo, ghi, frac, cr, cv, m, bad[key]
    }
    if (footnote) print "* offload engine: the CPU of the application processes alone; the daemon, which runs the protocol and the copies, is not counted"
  }' "$results" >"$out/summary.txt"
cat "$out/summary.txt"
