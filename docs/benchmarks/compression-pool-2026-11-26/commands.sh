#!/bin/bash
# The compressed collectives on the 2-core namespace cluster at 1 Gbit/s, 8 ranks, before
# and after the code-buffer pool (f2b50fd), each case before then after. "before" is
# 7ec9f01 built in a worktree (/work/before/build: only the OSU programs and mccl_run),
# "after" this tree's build/. Float32 Gaussian data, sigma 1.
set -u
O=${1:?usage: commands.sh OUT_DIR}
mkdir -p $O
run() { local build=$1 label=$2; shift 2
  echo "=== $label $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)"
  bench/fabric/run.sh --ranks 8 --rate 1gbit --impls mccl --scaling-ranks none \
    --budget 1 --no-plots --build-dir $build --label $label --out $O/$label "$@" >$O/$label.log 2>&1
  echo "rc=$? $(date -u +%T)"; grep -E '^(allgather|reduce_scatter|ag_rs)' $O/$label/summary.txt; }
for c in "rs reduce_scatter 128m off" "rs reduce_scatter 128m bound:0.01" \
         "agrs ag_rs_concurrent 16m off" "agrs ag_rs_concurrent 16m bound:0.01"; do
  read -r short bench size mode <<<"$c"
  for b in before after; do
    build=build; [[ $b == before ]] && build=/work/before/build
    run $build $b-$short-${mode/:/} --benches $bench --sizes $size --osu-arg --compress --osu-arg $mode
  done
done
echo DONE
