#!/bin/bash
# Encoded streams from a pool: e48c54f (before, worktree /tmp/base6) against the change
# (after); bench/fabric/run.sh, 8 ranks at 1 Gbit/s, 16 MiB, bound 1e-2 sigma, 2-core AMD EPYC.
cd /work/main
OUT=${OUT:-docs/benchmarks/fused-hop-2026-11-27/stream-pool}
for rep in 1 2 3; do
  for v in before after; do
    if [[ $v == before ]]; then b=/tmp/base6/build; else b=build; fi
    echo "== $v$rep load $(cut -d' ' -f1 /proc/loadavg)"
    timeout 900 bench/fabric/run.sh --impls mccl --scaling-ranks none --no-plots --build-dir $b \
      --rate 1gbit --ranks 8 --benches allgather,ag_rs_concurrent --sizes 16m \
      --osu-arg --compress --osu-arg bound:0.01 --label $v$rep --out $OUT/$v$rep > $OUT/$v$rep.log 2>&1
    grep -E "^(allgather|ag_rs)" $OUT/$v$rep/summary.txt
  done
done
