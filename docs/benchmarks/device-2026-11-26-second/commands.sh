#!/bin/bash
# The first call on the lent 16-core machine in the session of 2026-11-26 (evening), from
# the checkout's root, with .devbench/ packed by ../shared/devbench/prepare.sh from a
# RelWithDebInfo build of this tree (libmccl stripped of debug information). Parts in
# order of priority, each under its own limit; each part's folder comes back as one
# archive:
#   lat   #28: small broadcast/allgather at 2, 4, 8 ranks, 10 Gbit/s links: the inline
#         engine beside Open MPI's default, then the thread engine with its waiters'
#         spin (the default) and without it (MCCL_PROGRESS_WAIT_SPIN_US=0: the thread
#         engine as it was, but for the skipped eventfd write)
#   xo    #28: the algorithm table's crossovers with a core per rank
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

lat() { bench/fabric/run.sh --ranks 2,4,8 --rate 10gbit --sizes 8,1k,64k --benches bcast,allgather \
  --scaling-ranks none --budget 1 --no-plots --build-dir $B "$@"; }
export -f lat; export B W
part lat 250 "${R[@]}" bash -c 'lat --impls mccl,ompi-default --out $W/lat/inline &&
  lat --impls mccl --mccl-env MCCL_PROGRESS=thread --label thread --out $W/lat/thread &&
  lat --impls mccl --mccl-env MCCL_PROGRESS=thread --mccl-env MCCL_PROGRESS_WAIT_SPIN_US=0 \
    --label thread-nospin --out $W/lat/thread-nospin'
for v in inline thread thread-nospin; do grep -A19 '^bench' $W/lat/$v/summary.txt; done

part xo 170 "${R[@]}" bench/tune/crossover.sh --where fabric --rate 10gbit --ranks 2,4,8 \
  --max-size 1m -i 200 -x 20 --build-dir $B --out $W/xo/out
cat $W/xo/out/tuning_rows.txt
echo DONE
