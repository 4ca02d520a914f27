#!/bin/bash
# A launch's first allgather: switch-port drops per launch, before/after, on one
# 32-host cluster at 100 Mbit/s, MTU 9000 (docs/scale.md, "Pacing to the wire").
cd /work/main
N=jg; SW=jg-sw
tests/fabric/cluster.sh up --name $N --hosts 32 --rate 100mbit --mtu 9000 --rps > /dev/null 2>&1 || exit 1
tc_drops() { ip netns exec $SW tc -s qdisc 2>/dev/null | awk '/dropped/{gsub(",","",$7); s+=$7} END {print s}'; }
for rep in 1 2 3 4 5; do
  for v in before after; do
    if [[ $v == before ]]; then b=/tmp/base2/build; else b=build; fi
    a=$(tc_drops)
    timeout 120 tests/fabric/launch.sh --name $N --hosts 32 --timeout 100 -- \
      $b/bench/osu/mccl_osu_allgather -m 262144:262144 -i 1 -x 0 -u 0 --stats > /tmp/s33/gate-$v$rep.log 2>&1
    rc=$?
    z=$(tc_drops)
    echo "$v$rep rc=$rc load $(cut -d' ' -f1 /proc/loadavg) drops $((z - a)) $(grep -o 'repairs_requested [0-9/]*' /tmp/s33/gate-$v$rep.log | head -1)"
  done
done
tests/fabric/cluster.sh down --name $N > /dev/null 2>&1
