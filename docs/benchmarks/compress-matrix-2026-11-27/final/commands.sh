#!/bin/bash
# The targets' cases of issue 22 at the stop's final code, 2-core AMD EPYC, 8 ranks at 1 Gbit/s.
cd /work/main
OUT=${OUT:-docs/benchmarks/compress-matrix-2026-11-27/final}
run() {  # label, then run.sh arguments
  local label=$1; shift
  echo "== $label load $(cut -d' ' -f1 /proc/loadavg) $(date +%T)"
  timeout 900 bench/fabric/run.sh --impls mccl --scaling-ranks none --no-plots --label "$label" \
    --out "$OUT/$label" "$@" > "$OUT/$label.log" 2>&1
  grep -E "^(allgather|reduce_scatter|ag_rs)" "$OUT/$label/summary.txt"
}
for rep in 1 2; do
  run ag-off$rep --rate 1gbit --ranks 8 --benches allgather --sizes 16m
  run ag-bf16$rep --rate 1gbit --ranks 8 --benches allgather --sizes 16m --osu-arg --compress --osu-arg bf16
  run ag-b1e-2$rep --rate 1gbit --ranks 8 --benches allgather --sizes 16m --osu-arg --compress --osu-arg bound:0.01
  run rs-off$rep --rate 1gbit --ranks 8 --benches reduce_scatter --sizes 128m
  run rs-b1e-2$rep --rate 1gbit --ranks 8 --benches reduce_scatter --sizes 128m --osu-arg --compress --osu-arg bound:0.01
  run pair-off$rep --rate 1gbit --ranks 8 --benches ag_rs_concurrent --sizes 16m
  run pair-b1e-2$rep --rate 1gbit --ranks 8 --benches ag_rs_concurrent --sizes 16m --osu-arg --compress --osu-arg bound:0.01
done
