#!/bin/bash
# The alltoall on loopback: two MCCL builds (BASE and NEW, each under the
# inline and the thread engine) and Open MPI (ob1, btl tcp,self on lo)
# beside them, at 2 and 4 ranks, launches alternating (the order reversed
# every repetition). One line per launch:
#   rep ranks series size_bytes:avg_us ...
# Usage: ab.sh BASE_BUILD NEW_BUILD MPI_BENCH REPS MIN:MAX ITERS WARMUP > ab.txt
base=$1 new=$2 mpi=$3 reps=${4:-5} sizes=${5:-65536:16777216} iters=${6:-10} warm=${7:-2}
echo "# $(grep -m1 'model name' /proc/cpuinfo) | $(date -u +%FT%TZ) | load $(cut -d' ' -f1-3 /proc/loadavg) | sizes $sizes -i $iters -x $warm"
row() { awk '/^[0-9]+ /{printf "%s:%s ", $1, $2}'; }
for rep in $(seq "$reps"); do
  for ranks in 2 4; do
    series="base-inline new-inline base-thread new-thread ompi"
    ((rep % 2 == 0)) && series="ompi new-thread base-thread new-inline base-inline"
    for s in $series; do
      case $s in
        ompi) r=$(timeout 300 mpirun.openmpi --allow-run-as-root --oversubscribe -np "$ranks" \
          --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo \
          "$mpi" -b alltoall -m "$sizes" -i "$iters" -x "$warm" 2>&1 | row) ;;
        *) b=$new; [[ $s == base-* ]] && b=$base
          r=$(MCCL_PROGRESS=${s#*-} timeout 300 "$b/tools/mccl_run" -n "$ranks" -t 280 \
            "$b/bench/osu/mccl_osu_alltoall" -m "$sizes" -i "$iters" -x "$warm" 2>&1 | row) ;;
      esac
      echo "$rep $ranks $s $r"
    done
  done
done
echo "# end $(date -u +%FT%TZ) | load $(cut -d' ' -f1-3 /proc/loadavg)"
