#!/bin/bash
# cpu.sh impl bench size [env...]: per iteration: wall, busy CPU (user, sys, softirq), idle, from /proc/stat over two runs
impl=$1; b=$2; s=$3; shift 3; EXTRA=("$@")
cd /work/main/docs/benchmarks/thread-engine-2026-11-29
st() { head -1 /proc/stat | awk '{print $2+$3, $4, $7+$8, $5+$6}'; }   # user+nice, system, irq+softirq, idle+iowait
run() { if [ $impl = ompi ]; then ./cycfo.sh 4 $b $s $1; else ./cycf.sh /work/main/build 4 $b $s $1 MCCL_PROGRESS=$impl "${EXTRA[@]}"; fi; }
a=($(st)); t0=$(date +%s.%N); c1=$(run 1000); t1=$(date +%s.%N); b_=($(st)); c2=$(run 5000); t2=$(date +%s.%N); c=($(st))
python3 - "$impl" "$b" "$s" "$c1" "$c2" "${a[@]}" "${b_[@]}" "${c[@]}" $t0 $t1 $t2 <<'PY'
import sys
impl,b,s,c1,c2=sys.argv[1:6]; v=list(map(float,sys.argv[6:18])); t0,t1,t2=map(float,sys.argv[18:21])
a,bb,c=v[0:4],v[4:8],v[8:12]
d1=[bb[i]-a[i] for i in range(4)]; d2=[c[i]-bb[i] for i in range(4)]
n=4400  # (5000+500)-(1000+100)
per=[(d2[i]-d1[i])*10000/n for i in range(4)]  # jiffies(10ms) -> us
wall=((t2-t1)-(t1-t0))*1e6/n
print(f"{impl} {b} {s} cycle {c1}/{c2} us; per iter: wall {wall:.0f} user {per[0]:.0f} sys {per[1]:.0f} irq+soft {per[2]:.0f} idle {per[3]:.0f} us (CPU-us over 2 cores)")
PY
