#!/bin/bash
# The third call on the lent 16-core machine (2026-11-26, evening), same tree as
# commands.sh (f2b50fd's build):
#   xo    #28: the algorithm table's crossovers at 4 and 8 ranks (the first call's ran
#         out of time at 4 ranks: one program run did not exit, see hang)
#   hang  the 4-rank binomial broadcast of the crossover run did not exit after its last
#         size: six tries of the same command, each rank's threads' kernel state
#         (and gdb's backtraces where gdb exists) taken 25 s into any try still running
#   cpu   #28: the CPU time of the thread engine's waiters with and without their spin,
#         2 ranks on loopback, 8 B to 1 MiB
#   lat   #28: the small collectives again (inline beside Open MPI's default, the
#         thread engine), for the spread between runs
set -u
O=${OUT:?} W=/tmp/devout
mkdir -p $W
R=(bash .devbench/run.sh)
B=.devbench/build
part() { local name=$1 limit=$2; shift 2; mkdir -p $W/$name
  echo "=== $name $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)"
  timeout -k 5 "$limit" "$@" >$W/$name/console.log 2>&1; local rc=$?
  echo "=== $name rc=$rc $(date -u +%T)"; tar czf $O/$name.tgz -C $W $name; }

part xo 150 "${R[@]}" bench/tune/crossover.sh --where fabric --rate 10gbit --ranks 4,8 \
  --max-size 1m -i 200 -x 20 --timeout 40 --build-dir $B --out $W/xo/out
cat $W/xo/out/tuning_rows.txt

hang() {
  tests/fabric/cluster.sh up --name hg --hosts 4 --rate 10gbit --rps || return 1
  for i in 1 2 3 4 5 6; do
    ( sleep 25
      for p in $(pgrep -f 'bench/osu/mccl_osu_bcast'); do
        echo "== pid $p: $(tr '\0' ' ' </proc/$p/cmdline)"
        for t in /proc/$p/task/*; do
          echo "$t $(cat $t/comm) wchan=$(cat $t/wchan) syscall=$(cat $t/syscall)"; done
        command -v gdb >/dev/null && timeout 20 gdb -batch -ex 'thread apply all bt' -p $p 2>&1 | tail -80
      done ) >$W/hang/stacks$i.txt 2>&1 &
    local w=$!
    tests/fabric/launch.sh --name hg --hosts 4 --timeout 40 --logdir $W/hang/logs$i \
      --env MCCL_COLL_BCAST_ALGO=binomial --env MCCL_LOG_LEVEL=info -- \
      $B/bench/osu/mccl_osu_bcast -m 1:1048576 -i 200 -x 20 -c --json $W/hang/b$i.json \
      >$W/hang/run$i.log 2>&1
    echo "try $i rc=$? $(date -u +%T)"
    kill $w 2>/dev/null; wait $w 2>/dev/null
  done
  tests/fabric/cluster.sh down --name hg; }
export -f hang; export B W
part hang 110 "${R[@]}" bash -c hang
cat $W/hang/console.log

cpu() { for ws in 0 50; do
    MCCL_UDP_IFACE=lo MCCL_PROGRESS=thread MCCL_PROGRESS_WAIT_SPIN_US=$ws timeout 30 \
      $B/tools/mccl_run -n 2 $B/bench/osu/mccl_osu_bcast -m 1:1048576 -i 500 -x 50 \
      --json $W/cpu/ws$ws.json >$W/cpu/ws$ws.log 2>&1; echo "wait spin $ws rc=$?"; done; }
export -f cpu
part cpu 60 "${R[@]}" bash -c cpu
cat $W/cpu/console.log

lat() { bench/fabric/run.sh --ranks 2,4,8 --rate 10gbit --sizes 8,1k,64k --benches bcast,allgather \
  --scaling-ranks none --budget 1 --no-plots --build-dir $B "$@"; }
export -f lat
part lat 100 "${R[@]}" bash -c 'lat --impls mccl,ompi-default --out $W/lat/inline2 &&
  lat --impls mccl --mccl-env MCCL_PROGRESS=thread --label thread --out $W/lat/thread2'
for v in inline2 thread2; do grep -A19 '^bench' $W/lat/$v/summary.txt; done
echo DONE
