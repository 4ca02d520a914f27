#!/bin/bash
# ab_lo.sh OUT REPS BENCH MSIZES ITERS [N]: on lo, N ranks (default 2), alternating launches of
# MCCL with MCCL_PROGRESS_SPIN_US=50 (old), MCCL unset (new) and Open MPI (MPI_BENCH)
out=$1 reps=$2 bench=$3 m=$4 it=$5 n=${6:-2}
mkdir -p $out; : > $out/all.jsonl
for r in $(seq $reps); do
  for v in old new ompi; do
    j=$out/$v-$r.json; rm -f $j
    case $v in
      old) MCCL_UDP_IFACE=lo timeout 120 build/tools/mccl_run -n $n -x MCCL_PROGRESS_SPIN_US=50 build/bench/osu/mccl_osu_$bench -m $m -i $it -x 200 --json $j > /dev/null 2>&1 ;;
      new) MCCL_UDP_IFACE=lo timeout 120 build/tools/mccl_run -n $n build/bench/osu/mccl_osu_$bench -m $m -i $it -x 200 --json $j > /dev/null 2>&1 ;;
      ompi) timeout 120 mpirun.openmpi --allow-run-as-root --oversubscribe -np $n --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo ${MPI_BENCH:-/tmp/mpi_coll_bench} -b $bench -m $m -i $it -x 200 --json $j > /dev/null 2>&1 ;;
    esac
    sed "s/^{/{\"series\":\"$v\",\"rep\":$r,\"load\":\"$(cut -d' ' -f1 /proc/loadavg)\",/" $j >> $out/all.jsonl
  done
done
python3 - $out/all.jsonl <<'PY'
import json,sys,statistics as st,collections
d=collections.defaultdict(list)
for l in open(sys.argv[1]):
    r=json.loads(l); d[(r['bytes_per_rank'],r['series'])].append(r['cycle_us'])
for (s,impl),v in sorted(d.items()):
    print(f"{s:>6} {impl:8} median {st.median(v):7.1f}  min {min(v):7.1f} max {max(v):7.1f}  n={len(v)}")
PY
