#!/bin/bash
# The compression matrix of issue 22 at the session's final code (2-core AMD EPYC):
# 1 Gbit/s, 4 and 8 ranks, 128 KiB-16 MiB per rank, every mode; the reduce-scatter and
# the FSDP pair; training-like data; 10 Gbit/s (the rule against exact).
# Each invocation brings up and takes down its own cluster.
cd /work/main
OUT=${OUT:-docs/benchmarks/compress-matrix-2026-11-27/matrix}
run() {  # label, then run.sh arguments
  local label=$1; shift
  echo "== $label load $(cut -d' ' -f1 /proc/loadavg) $(date +%T)"
  timeout 900 bench/fabric/run.sh --impls mccl --scaling-ranks none --no-plots --label "$label" \
    --out "$OUT/$label" "$@" > "$OUT/$label.log" 2>&1
  echo "   rc=$? $(date +%T)"
}
ag="--rate 1gbit --ranks 4,8 --benches allgather --sizes 128k,1m,16m"
run ag-off $ag
run ag-bf16 $ag --osu-arg --compress --osu-arg bf16
run ag-b1e-2 $ag --osu-arg --compress --osu-arg bound:0.01
run ag-b1e-3 $ag --osu-arg --compress --osu-arg bound:0.001
# zfp is slower than the link on a quarter of a core, so the rule runs it exact; forced
# here to show what it costs, at the two smaller sizes (16 MiB took 4-7 s per call).
zfp="--rate 1gbit --ranks 4,8 --benches allgather --sizes 128k,1m --mccl-env MCCL_COLL_COMPRESS_MAX_MBIT=-1"
run ag-zfp16 $zfp --osu-arg --compress --osu-arg zfp:16
run ag-zfp8 $zfp --osu-arg --compress --osu-arg zfp:8
# The reduce-scatter's size is OSU's, the whole vector: 128 MiB is 16 MiB per rank.
rs="--rate 1gbit --ranks 8 --benches reduce_scatter --sizes 16m,128m"
run rs-off $rs
run rs-b1e-2 $rs --osu-arg --compress --osu-arg bound:0.01
run rs-b1e-3 $rs --osu-arg --compress --osu-arg bound:0.001
pair="--rate 1gbit --ranks 8 --benches ag_rs_concurrent --sizes 1m,16m"
run pair-off $pair
run pair-bf16 $pair --osu-arg --compress --osu-arg bf16
run pair-b1e-2 $pair --osu-arg --compress --osu-arg bound:0.01
td="--rate 1gbit --ranks 8 --benches allgather --sizes 16m --osu-arg --data --osu-arg bench/data/mlp_grads.f32"
run grad-off $td
run grad-bf16 $td --osu-arg --compress --osu-arg bf16
run grad-b1e-2 $td --osu-arg --compress --osu-arg bound:0.01
run grad-b1e-3 $td --osu-arg --compress --osu-arg bound:0.001
ten="--rate 10gbit --ranks 8 --benches allgather,ag_rs_concurrent --sizes 16m"
run 10g-off $ten
run 10g-rule $ten --osu-arg --compress --osu-arg bound:0.01
ten_rs="--rate 10gbit --ranks 8 --benches reduce_scatter --sizes 128m"
run 10g-rs-off $ten_rs
run 10g-rs-rule $ten_rs --osu-arg --compress --osu-arg bound:0.01
