#!/usr/bin/env bash
# osu_format_test.sh MCCL_RUN BENCH_DIR — smoke test of the OSU-compatible
# programs: each runs on 2 and 3 local ranks (UDP loopback multicast, TCP),
# validates every iteration (-c) and must print OSU's table exactly: a blank
# line, a "# ... Latency Test" title, the "# Size" header with right-aligned
# columns of width 18, one row per power of two with 2 decimals and "Pass",
# plus one well-formed JSON line per size (--json). Not a benchmark: a few
# iterations of small sizes only.
set -euo pipefail
run=$1 dir=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { # check NAME OUT MIN MAX JSON
  local name=$1 out=$2 min=$3 max=$4 json=$5 rows
  # stdout of rank 0 only; mccl_run may prefix nothing, so take the table as printed.
  local hdr='^# Size {7}Avg Latency\(us\) {3}Min Latency\(us\) {3}Max Latency\(us\) {2}Iterations {8}Validation$'
  local row='^[0-9]+ +[0-9]+\.[0-9]{2} +[0-9]+\.[0-9]{2} +[0-9]+\.[0-9]{2} +[0-9]+ +Pass$'
  grep -qE '^# MCCL .* Latency Test v[0-9]' "$out" || { echo "$name: no title"; return 1; }
  grep -qE "$hdr" "$out" || { echo "$name: header differs from OSU's"; return 1; }
  # Every data row is 10 + 18*3 + 12 + 18 characters wide, as OSU prints it.
  rows=$(grep -E "$row" "$out" | awk 'length($0) == 94' | wc -l)
  local want=0 s
  for ((s = min; s <= max; s *= 2)); do want=$((want + 1)); done
  ((rows == want)) || { echo "$name: $rows rows of OSU's shape, want $want"; return 1; }
  [[ $(grep -B1 -E '^# MCCL' "$out" | head -1) == "" ]] || { echo "$name: no blank line before the title"; return 1; }
  [[ $(wc -l <"$json") -eq $want ]] || { echo "$name: $(wc -l <"$json") JSON lines, want $want"; return 1; }
  grep -vqE '^\{"bench":"[a-z_]+","impl":"mccl",.*"validated":true,.*\}$' "$json" &&
    { echo "$name: malformed JSON line"; return 1; }
  # A validating loop does more than the collective and its barrier.
  grep -q '"cycle_us"' "$json" && { echo "$name: cycle_us although -c validated"; return 1; }
  return 0
}
for prog in bcast allgather reduce_scatter allreduce alltoall ag_rs; do
  min=1
  [[ $prog == bcast || $prog == allgather || $prog == alltoall ]] || min=4
  for n in 2 3; do
    name="mccl_osu_$prog -n $n"
    out=$tmp/$prog.$n.out json=$tmp/$prog.$n.json
    if ! timeout 120 "$run" -n "$n" -t 100 "$dir/mccl_osu_$prog" -m "$min:4096" -i 3 -x 1 -c -f \
      --json "$json" >"$out" 2>&1; then
      echo "$name: failed"; cat "$out"; fail=1; continue
    fi
    if ! check "$name" "$out" "$min" 4096 "$json"; then cat "$out"; fail=1; continue; fi
    echo "$name: ok"
  done
done
# Without -c each line carries cycle_us, a positive time per iteration.
json=$tmp/cycle.json
if timeout 120 "$run" -n 2 -t 100 "$dir/mccl_osu_bcast" -m 1:4 -i 3 -x 1 --json "$json" \
  >"$tmp/cycle.out" 2>&1 &&
  [[ $(grep -cE '"validated":null,.*"cycle_us":([1-9][0-9]*\.[0-9]+|0\.[0-9]*[1-9][0-9]*)[,}]' "$json") -eq 3 ]]; then
  echo "mccl_osu_bcast without -c: cycle_us ok"
else
  echo "mccl_osu_bcast without -c: want 3 JSON lines with a positive cycle_us"
  cat "$tmp/cycle.out" "$json"
  fail=1
fi
exit $fail
