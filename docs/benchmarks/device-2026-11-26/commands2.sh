#!/bin/bash
# The second call on the lent machine (2026-11-26), after commands.sh: the torch part
# again (the module did not compile against PyTorch 2.11 in the first call: fixed in
# src/torch/compat.h), the 32-host allgather three times (the default, then with a
# longer loss deadline floor and a wider reorder window, to tell late chunks from lost
# ones), and the loopback broadcast with 5 reps.
set -u
O=${OUT:?} W=/tmp/devout
mkdir -p $W
R=(bash .devbench/run.sh)
B=.devbench/build
part() { local name=$1 limit=$2; shift 2; mkdir -p $W/$name
  echo "=== $name $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)"
  timeout -k 5 "$limit" "$@" >$W/$name/console.log 2>&1; local rc=$?
  echo "=== $name rc=$rc $(date -u +%T)"; tar czf $O/$name.tgz -C $W $name; }

part torch 300 "${R[@]}" tests/torch/gpu_machine.sh run $W/torch cuda fsdp collectives operations
grep -E '^(python|cuda|torch)' $W/torch/console.log

ag32() { local label=$1; shift
  bench/fabric/run.sh --ranks 32 --rate 1gbit --impls mccl --sizes 1m --benches allgather \
    --scaling-ranks none --budget 3 --no-plots --build-dir $B --label $label --out $W/r32v/$label "$@"
  grep -E 'allgather +32|injected' $W/r32v/$label/summary.txt; }
export -f ag32; export B W
part r32v 150 "${R[@]}" bash -c 'ag32 default; ag32 stall4ms --mccl-env MCCL_PROTO_STALL_MIN_US=4000;
  ag32 reorder256 --mccl-env MCCL_PROTO_REORDER_WINDOW=256'
cat $W/r32v/console.log | grep -v '^devbench'

part lo 60 "${R[@]}" bench/loopback/run.sh --reps 5 --impls mccl,ompi-default \
  --variant auth_on:MCCL_PROTO_AUTH=on --variant auth_off:MCCL_PROTO_AUTH=off \
  --build-dir $B --out $W/lo/out
tail -n 5 $W/lo/out/summary.txt
echo DONE
# The third call: the two operations tests after test_operations.py learned that
# PyTorch 2.11's monitored_barrier refuses every backend but gloo by name:
#   bash .devbench/run.sh tests/torch/gpu_machine.sh run $OUT/torch operations operations3
