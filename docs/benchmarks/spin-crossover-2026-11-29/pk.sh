#!/bin/bash
# pk.sh impl bench size : packets per iteration per host (tx), by difference of two runs
impl=$1; b=$2; s=$3
C=/work/main/tests/fabric/cluster.sh
tot() { $C counters --name cy | awk '{tx+=$4; rx+=$5} END {print tx, rx}'; }
run() { if [ $impl = ompi ]; then ./cycfo.sh 4 $b $s $1; else ./cycf.sh /work/main/build 4 $b $s $1 MCCL_PROGRESS=$impl; fi; }
a=($(tot)); c1=$(run 1000); b_=($(tot)); c2=$(run 3000); c=($(tot))
d1=$((b_[0]-a[0])); d2=$((c[0]-b_[0]))
echo "$impl $b $s cycles $c1 $c2 tx_pkts_run1 $d1 run2 $d2 per_iter $(python3 -c "print(round(($d2-$d1)/2200,2))")"
