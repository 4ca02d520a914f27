#!/bin/bash
# The second call on the lent 16-core machine (2026-11-26, evening), right after
# commands.sh on the same warm machine and the same .devbench/:
#   r32   #33: 32 hosts, 1 Gbit/s, 1 MiB allgather with the learned loss deadline floor
#   cz    #22: the compressed collectives with a core per rank: 8 hosts at 1 Gbit/s,
#         float32 Gaussian data (sigma 1), uncompressed, bound 1e-2 sigma, bf16
set -u
O=${OUT:?} W=/tmp/devout
mkdir -p $W
R=(bash .devbench/run.sh)
B=.devbench/build
part() { local name=$1 limit=$2; shift 2; mkdir -p $W/$name
  echo "=== $name $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)"
  timeout -k 5 "$limit" "$@" >$W/$name/console.log 2>&1; local rc=$?
  echo "=== $name rc=$rc $(date -u +%T)"; tar czf $O/$name.tgz -C $W $name; }

part r32 110 "${R[@]}" bench/fabric/run.sh --ranks 32 --rate 1gbit --impls mccl --sizes 1m \
  --benches allgather --scaling-ranks none --budget 3 --no-plots --build-dir $B --out $W/r32/out
grep -E 'allgather +32|injected' $W/r32/out/summary.txt


cz() { for c in "ag allgather 16m off" "ag allgather 16m bound:0.01" "ag allgather 16m bf16" \
         "rs reduce_scatter 128m off" "rs reduce_scatter 128m bound:0.01" \
         "agrs ag_rs_concurrent 16m off" "agrs ag_rs_concurrent 16m bound:0.01"; do
    read -r short bench size mode <<<"$c"; local label=$short-${mode/:/}
    echo "=== $label $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)"
    bench/fabric/run.sh --ranks 8 --rate 1gbit --impls mccl --scaling-ranks none --budget 1 \
      --no-plots --build-dir $B --label $label --out $W/cz/$label --benches $bench --sizes $size \
      --osu-arg --compress --osu-arg $mode >$W/cz/$label.log 2>&1
    echo "rc=$?"; grep -E '^(allgather|reduce_scatter|ag_rs)' $W/cz/$label/summary.txt; done; }
export -f cz; export B W
part cz 200 "${R[@]}" bash -c cz
cat $W/cz/console.log
echo DONE
