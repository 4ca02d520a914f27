#!/usr/bin/env bash
# Flat against binomial tree for small broadcasts where ranks share cores, beside Open
# MPI's default: ROUNDS alternating rounds (ABC then CBA) per (ranks, size), one JSON
# line per run in $OUT/results.jsonl (the programs' lines plus "series" and "where").
#   OUT=DIR WHERE=loopback|fabric RANKS="4 8" SIZES="8 1024" ROUNDS=3 bash commands.sh
# fabric needs a cluster made by tests/fabric/cluster.sh up --name $CLUSTER (10 Gbit/s
# links, RPS on) with as many hosts as the largest rank count.
set -u
REPO=$(git rev-parse --show-toplevel)
: "${OUT:?}" "${WHERE:=loopback}" "${RANKS:=4 8}" "${SIZES:=8 1024 8192 32768 65536}"
: "${ROUNDS:=3}" "${ITERS:=3000}" "${CLUSTER:=lt}"
mkdir -p "$OUT"
mpicc.openmpi -O2 -o "$OUT/mpi_coll_bench" "$REPO/bench/fabric/mpi_coll_bench.c"
{ date -u +%FT%TZ; grep -m1 'model name' /proc/cpuinfo; nproc; cat /proc/loadavg
  git -C "$REPO" rev-parse --short HEAD; echo "$WHERE ranks=$RANKS sizes=$SIZES rounds=$ROUNDS"; } >"$OUT/machine.txt"
one() {  # series ranks size
  local s=$1 n=$2 m=$3 j=$OUT/run.json args
  rm -f "$j"
  args=(-m "$m:$m" -i "$ITERS" -x 200 --json "$j")
  if [[ $s == ompi-default ]]; then
    if [[ $WHERE == fabric ]]; then
      "$REPO/tests/fabric/launch.sh" --mpirun --name "$CLUSTER" --hosts "$n" --timeout 120 -- \
        "$OUT/mpi_coll_bench" -b bcast "${args[@]}" --impl ompi-default
    else
      timeout 120 mpirun.openmpi --allow-run-as-root --oversubscribe -np "$n" --mca pml ob1 \
        --mca btl tcp,self --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo \
        "$OUT/mpi_coll_bench" -b bcast "${args[@]}" --impl ompi-default
    fi
  else
    local algo=auto; [[ $s == mccl-binomial ]] && algo=binomial
    if [[ $WHERE == fabric ]]; then
      "$REPO/tests/fabric/launch.sh" --name "$CLUSTER" --hosts "$n" --timeout 120 \
        --env MCCL_COLL_BCAST_ALGO=$algo -- "$REPO/build/bench/osu/mccl_osu_bcast" "${args[@]}" --stats
    else
      MCCL_UDP_IFACE=lo timeout 120 "$REPO/build/tools/mccl_run" -n "$n" -x MCCL_COLL_BCAST_ALGO=$algo \
        "$REPO/build/bench/osu/mccl_osu_bcast" "${args[@]}" --stats
    fi
  fi >"$OUT/last.log" 2>&1
  if [[ -s $j ]]; then
    sed "s/^{/{\"series\":\"$s\",\"where\":\"$WHERE\",\"load1\":$(cut -d' ' -f1 /proc/loadavg),/" "$j" >>"$OUT/results.jsonl"
  else
    echo "{\"series\":\"$s\",\"where\":\"$WHERE\",\"ranks\":$n,\"bytes_per_rank\":$m,\"failed\":true}" >>"$OUT/results.jsonl"
  fi
}
for n in $RANKS; do
  for m in $SIZES; do
    for r in $(seq "$ROUNDS"); do
      order=(mccl-auto mccl-binomial ompi-default)
      ((r % 2)) || order=(ompi-default mccl-binomial mccl-auto)
      for s in "${order[@]}"; do one "$s" "$n" "$m"; done
    done
  done
done
cat /proc/loadavg >>"$OUT/machine.txt"
