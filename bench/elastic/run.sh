#!/usr/bin/env bash
# run.sh — how long a job takes to get over a death: from a rank's SIGKILL in
# the middle of an allgather to every survivor holding its shrunk
# communicator (docs/elastic.md). Processes on this host (mccl_run: TCP store
# bootstrap, UDP multicast on lo, the TCP reliable transport), each running
# bench/elastic/elastic_worker (built as build/tests/mp/elastic_worker).
#
#   bench/elastic/run.sh [--ranks 8] [--kills 20] [--engines inline,thread]
#                        [--steps 4] [--out DIR] [--build-dir DIR]
#
# Per engine, --kills jobs of --ranks processes; job i kills rank i % ranks
# (rank 0 included) at step 1 of --steps; the survivors shrink, redo the
# step and finish, their states compared bit for bit. Per job:
#   recover_s   the last survivor's "shrunk at" minus the victim's "killed
#               at" (CLOCK_MONOTONIC: one clock for the host)
#   ok          every survivor finished with the same state
# Output: DIR/results.jsonl (one line per job), DIR/machine.txt, the ranks'
# output in DIR/raw/, and per engine the median and the largest recover_s.
# Exit: 0 done (failed jobs have ok=false), 1 error, 2 usage.
set -euo pipefail

ranks=8
kills=20
engines=inline,thread
steps=4
out=""
build=""
usage() { sed -n '2,19p' "$0" >&2; exit 2; }
while (($#)); do
  case $1 in
    --ranks) ranks=${2-}; shift 2 ;;
    --kills) kills=${2-}; shift 2 ;;
    --engines) engines=${2-}; shift 2 ;;
    --steps) steps=${2-}; shift 2 ;;
    --out) out=${2-}; shift 2 ;;
    --build-dir) build=${2-}; shift 2 ;;
    -h|--help) usage ;;
    *) echo "run.sh: unknown argument '$1'" >&2; usage ;;
  esac
done
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${build:-$root/build}
worker=$build/tests/mp/elastic_worker
launcher=$build/tools/mccl_run
for f in "$worker" "$launcher"; do
  [[ -x $f ]] || { echo "run.sh: $f not built (cmake --build $build)" >&2; exit 1; }
done
out=${out:-$(mktemp -d /tmp/mccl-elastic.XXXXXX)}
mkdir -p "$out/raw"
: > "$out/results.jsonl"
{
  echo "date: $(date -u +%FT%TZ)"
  echo "host: $(uname -srm), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
  echo "mccl: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "loadavg at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "command: $0 --ranks $ranks --kills $kills --engines $engines --steps $steps"
} > "$out/machine.txt"

IFS=, read -r -a engine_list <<< "$engines"
for engine in "${engine_list[@]}"; do
  for ((i = 0; i < kills; i++)); do
    victim=$((i % ranks))
    raw=$out/raw/$engine-$i.txt
    load=$(cut -d' ' -f1 /proc/loadavg)
    set +e
    timeout 120 "$launcher" -n "$ranks" -t 100 -x MCCL_PROGRESS="$engine" \
      -x MCCL_COLL_TIMEOUT_MS=20000 "$worker" "$steps" "$victim@1" > "$raw" 2>&1
    set -e
    # The victim's kill time, each survivor's shrink time and final state.
    python3 - "$raw" "$engine" "$i" "$victim" "$ranks" "$load" >> "$out/results.jsonl" <<'PY'
import json, re, sys
raw, engine, i, victim, ranks, load = sys.argv[1:]
text = open(raw).read()
killed = [float(x) for x in re.findall(r"rank \d+ killed at ([0-9.]+)", text)]
shrunk = [float(x) for x in re.findall(r"rank \d+ shrunk at ([0-9.]+)", text)]
states = set(re.findall(r"rank \d+ done: .* state ([0-9a-f]+)", text))
done = len(re.findall(r"rank \d+ done:", text))
ok = len(killed) == 1 and len(shrunk) == int(ranks) - 1 and done == int(ranks) - 1 and len(states) == 1
rec = max(shrunk) - killed[0] if killed and shrunk else None
print(json.dumps({"engine": engine, "job": int(i), "ranks": int(ranks), "victim": int(victim),
                  "recover_s": rec, "survivors_done": done, "ok": ok, "load1": float(load)}))
PY
    tail -1 "$out/results.jsonl"
  done
done
python3 - "$out/results.jsonl" <<'PY' | tee "$out/summary.txt"
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
for engine in dict.fromkeys(r["engine"] for r in rows):
    mine = [r for r in rows if r["engine"] == engine]
    times = [r["recover_s"] for r in mine if r["ok"]]
    failed = sum(not r["ok"] for r in mine)
    if times:
        print(f"{engine}: {len(mine)} kills of {mine[0]['ranks']} ranks, kill to shrunk: median "
              f"{statistics.median(times):.3f} s, max {max(times):.3f} s, failed jobs {failed}")
    else:
        print(f"{engine}: {len(mine)} kills, every job failed")
PY
echo "results in $out"
