#!/bin/bash
# The vectorised bound decode: 79767bb (before, worktree /tmp/base6) against the change
# (after), 8 hosts at 1 Gbit/s, 2-core AMD EPYC, 16 MiB float32 Gaussian per rank.
cd /work/main
OUT=${OUT:-docs/benchmarks/fused-hop-2026-11-27/decode/logs}
for rep in 1 2 3; do
  for v in before after; do
    if [[ $v == before ]]; then b=/tmp/base6/build; else b=build; fi
    load=$(cut -d' ' -f1 /proc/loadavg)
    timeout 300 tests/fabric/launch.sh --name cz --hosts 8 --timeout 280 -- \
      $b/bench/osu/mccl_osu_allgather -m 16777216:16777216 -i 15 -x 3 -u 0 --compress bound:0.01 -f > $OUT/ag-$v$rep.log 2>&1
    echo "ag $v$rep load $load: $(grep -E '^\[h0\] 16777216' $OUT/ag-$v$rep.log)"
  done
done
for rep in 1 2 3; do
  for v in before after; do
    if [[ $v == before ]]; then b=/tmp/base6/build; else b=build; fi
    load=$(cut -d' ' -f1 /proc/loadavg)
    timeout 300 tests/fabric/launch.sh --name cz --hosts 8 --timeout 280 -- \
      $b/bench/osu/mccl_osu_ag_rs -m 16777216:16777216 -i 8 -x 2 -u 0 --compress bound:0.01 -f > $OUT/pair-$v$rep.log 2>&1
    echo "pair $v$rep load $load: $(grep -E '^\[h0\] 16777216' $OUT/pair-$v$rep.log)"
  done
done
for bench in allgather ag_rs; do
  load=$(cut -d' ' -f1 /proc/loadavg)
  timeout 300 tests/fabric/launch.sh --name cz --hosts 8 --timeout 280 -- \
    build/bench/osu/mccl_osu_$bench -m 16777216:16777216 -i 8 -x 2 -u 0 -f > $OUT/$bench-off.log 2>&1
  echo "$bench off load $load: $(grep -E '^\[h0\] 16777216' $OUT/$bench-off.log)"
done
