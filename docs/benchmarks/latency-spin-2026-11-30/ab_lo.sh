#!/bin/bash
# ab_lo.sh OUT REPS BENCH MSIZES ITERS [N [VARIANT...]]: on lo, N ranks (default 2), alternating
# launches of each VARIANT, then each size's cycle (median, range) per variant. VARIANT: ompi
# (Open MPI, MPI_BENCH) or name[:K=V,K=V] (MCCL's mccl_osu_BENCH with that environment). Default:
# old (MCCL_PROGRESS_SPIN_US=50), new (nothing set) and ompi. PIN=1: rank r on CPU r.
out=$1 reps=$2 bench=$3 m=$4 it=$5 n=${6:-2}
shift $(($# < 6 ? $# : 6))
variants=("$@"); ((${#variants[@]})) || variants=(old:MCCL_PROGRESS_SPIN_US=50 new ompi)
mkdir -p $out; : > $out/all.jsonl
for r in $(seq $reps); do
  for v in "${variants[@]}"; do
    name=${v%%:*}; j=$out/$name-$r.json; rm -f $j
    if [ "$name" = ompi ]; then
      bind=(--oversubscribe); [ "${PIN:-0}" = 1 ] && bind=(--bind-to core --map-by core)
      timeout 120 mpirun.openmpi --allow-run-as-root "${bind[@]}" -np $n --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo ${MPI_BENCH:-/tmp/mpi_coll_bench} -b $bench -m $m -i $it -x 200 --json $j > /dev/null 2>&1
    else
      xs=(); [ "$v" != "$name" ] && IFS=, read -ra kvs <<< "${v#*:}" && for e in "${kvs[@]}"; do xs+=(-x "$e"); done
      run=(build/bench/osu/mccl_osu_$bench -m $m -i $it -x 200 --json $j)
      [ "${PIN:-0}" = 1 ] && run=(/bin/sh -c "exec taskset -c \$MCCL_RANK ${run[*]}")
      MCCL_UDP_IFACE=lo timeout 120 build/tools/mccl_run -n $n "${xs[@]}" "${run[@]}" > /dev/null 2>&1
    fi
    sed "s/^{/{\"series\":\"$name\",\"rep\":$r,\"load\":\"$(cut -d' ' -f1 /proc/loadavg)\",/" $j >> $out/all.jsonl
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
