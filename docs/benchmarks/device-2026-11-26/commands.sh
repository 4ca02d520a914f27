#!/bin/bash
# One call on the lent 16-core GPU machine (2026-11-26), from the checkout's root, with
# .devbench/ packed here by ../shared/devbench/prepare.sh and tests/torch/gpu_machine.sh
# pack from a RelWithDebInfo build of this commit (libmccl stripped of debug information
# to fit the carry limit). Parts in order of priority, each under its own limit; each
# part's folder comes back as one archive:
#   torch  #27: mccl_torch built against the machine's PyTorch, tests with CUDA tensors
#          (FSDP1, FSDP2, a compiled step), FSDP on CPU tensors, collectives, operations
#   r32    #33: 32 hosts, 1 Gbit/s, 1 MiB allgather and broadcast (2 and 32 hosts)
#   setup  #33: communicator creation at 32 hosts, 10 runs, default set-up timeout
#   lat    #28: small broadcast/allgather at 2, 4, 8 ranks, 10 Gbit/s links, inline engine
#          against Open MPI's default, then the thread engine
#   lo     #25: one core's broadcast on loopback, authenticated and not, against Open MPI
set -u
O=${OUT:?} W=/tmp/devout
mkdir -p $W
R=(bash .devbench/run.sh)
B=.devbench/build
{ lscpu; nproc; uname -a; cat /proc/loadavg; nvidia-smi -L; } >$O/machine.txt 2>&1
part() { local name=$1 limit=$2; shift 2; mkdir -p $W/$name
  echo "=== $name $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)"
  timeout -k 5 "$limit" "$@" >$W/$name/console.log 2>&1; local rc=$?
  echo "=== $name rc=$rc $(date -u +%T)"; tar czf $O/$name.tgz -C $W $name; }

part torch 240 "${R[@]}" tests/torch/gpu_machine.sh run $W/torch cuda fsdp collectives operations
grep -E '^(python|cuda|torch)' $W/torch/console.log

part r32 150 "${R[@]}" bench/fabric/run.sh --ranks 32 --rate 1gbit --impls mccl,ompi-default \
  --sizes 1m --benches bcast,allgather --scaling-ranks 2 --scaling-size 1m --budget 2 \
  --no-plots --build-dir $B --out $W/r32/out
grep -A4 '^bench' $W/r32/out/summary.txt; grep -E 'Targets|injected|Load' $W/r32/out/summary.txt

setup32() {
  tests/fabric/cluster.sh up --name s32 --hosts 32 --rate 1gbit --rps &&
    bench/setup/run.sh --ranks 32 --reps 10 --cluster s32 --timeout 60 --build-dir $B --out $W/setup/out
  local rc=$?; tests/fabric/cluster.sh down --name s32; return $rc; }
export -f setup32; export B W
part setup 100 "${R[@]}" bash -c setup32
grep -A12 'set-up cost' $W/setup/console.log

lat() { bench/fabric/run.sh --ranks 2,4,8 --rate 10gbit --sizes 8,1k,64k --benches bcast,allgather \
  --scaling-ranks none --budget 1 --no-plots --build-dir $B "$@"; }
export -f lat
part lat 170 "${R[@]}" bash -c 'lat --impls mccl,ompi-default --out $W/lat/inline &&
  lat --impls mccl --mccl-env MCCL_PROGRESS=thread --label thread --out $W/lat/thread'
grep -A14 '^bench' $W/lat/inline/summary.txt; grep -A8 '^bench' $W/lat/thread/summary.txt

part lo 60 "${R[@]}" bench/loopback/run.sh --reps 3 --impls mccl,ompi-default \
  --variant auth_on:MCCL_PROTO_AUTH=on --variant auth_off:MCCL_PROTO_AUTH=off \
  --build-dir $B --out $W/lo/out
tail -n 6 $W/lo/out/summary.txt
echo DONE
