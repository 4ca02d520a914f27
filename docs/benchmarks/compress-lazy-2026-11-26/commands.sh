#!/bin/bash
# The compressed sums on the 2-core namespace cluster at 1 Gbit/s, 8 ranks, before and
# after the lazy quantisation (faf7026: each block quantised just before the ring first
# reads it) and the root's header reuse (c59304d), each case before then after, twice.
# "before" is d282b52 built in a worktree (BASE: only the OSU programs and mccl_run), "after"
# this tree's build/. The cluster's MTU is 1500, so landing (4 KiB datagrams and up) is off
# in both. Float32 Gaussian data, sigma 1.
set -u
O=${1:?usage: commands.sh OUT_DIR}
BASE=${BASE:-/tmp/base/build}
mkdir -p "$O"
cd "$(dirname "$0")/../../.."
run() { local build=$1 label=$2; shift 2
  echo "=== $label $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)"
  bench/fabric/run.sh --ranks 8 --rate 1gbit --impls mccl --scaling-ranks none \
    --budget 1 --no-plots --build-dir "$build" --label "$label" --out "$O/$label" "$@" >"$O/$label.log" 2>&1
  echo "rc=$? $(date -u +%T)"; grep -E '^(allgather|reduce_scatter|ag_rs)' "$O/$label/summary.txt"; }
for rep in 1 2; do
  for c in "rs reduce_scatter 128m bound:0.01" "agrs ag_rs_concurrent 16m bound:0.01" \
           "rs reduce_scatter 128m off"; do
    read -r short bench size mode <<<"$c"
    for b in before after; do
      build=build; [[ $b == before ]] && build=$BASE
      run $build $b-$short-${mode/:/}-$rep --benches $bench --sizes $size --osu-arg --compress --osu-arg $mode
    done
  done
done
echo DONE
