#!/bin/bash
# The compressed collectives on the 2-core namespace cluster at 1 Gbit/s, 8 ranks, before
# and after the faster codec (9216379), one session, each case before then after. "before" is this tree with
# src/codec as of 9723859, packed into .devbench-codecold/; "after" this tree, packed into
# .devbench/ (../shared/devbench/prepare.sh). Float32 Gaussian data, sigma 1.
set -u
O=${1:?usage: commands.sh OUT_DIR}
mkdir -p $O
run() { local dev=$1 label=$2; shift 2
  echo "=== $label $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)"
  bash $dev/run.sh bench/fabric/run.sh --ranks 8 --rate 1gbit --impls mccl --scaling-ranks none \
    --budget 1 --no-plots --build-dir $dev/build --label $label --out $O/$label "$@" >$O/$label.log 2>&1
  echo "rc=$? $(date -u +%T)"; grep -E '^(allgather|reduce_scatter|ag_rs)' $O/$label/summary.txt; }
# Each case before then after, so that load drifts show as spread, not as a bias.
for c in "ag allgather 16m off" "ag allgather 16m bound:0.01" "ag allgather 16m bf16" \
         "rs reduce_scatter 128m off" "rs reduce_scatter 128m bound:0.01" \
         "agrs ag_rs_concurrent 16m off" "agrs ag_rs_concurrent 16m bound:0.01"; do
  read -r short bench size mode <<<"$c"
  for build in before after; do
    dev=.devbench; [[ $build == before ]] && dev=.devbench-codecold
    run $dev $build-$short-${mode/:/} --benches $bench --sizes $size --osu-arg --compress --osu-arg $mode
  done
done
echo DONE
