#!/bin/bash
cd /work/main
D=(--data bench/data/mlp_params.f32)
for rep in 1 2; do
  for v in before after; do
    if [[ $v == before ]]; then b=/tmp/base2/build; else b=build; fi
    load=$(cut -d' ' -f1 /proc/loadavg)
    timeout 300 tests/fabric/launch.sh --name cz --hosts 8 --timeout 280 -- \
      $b/bench/osu/mccl_osu_allgather -m 16777216:16777216 -i 10 -x 2 -u 0 --compress bound:0.01 "${D[@]}" -f > /tmp/s22/tr-$v$rep.log 2>&1
    echo "train $v$rep load $load: $(grep -E '^\[h0\] 16777216' /tmp/s22/tr-$v$rep.log) $(grep -o 'ratio [0-9.]*' /tmp/s22/tr-$v$rep.log)"
  done
done
for m in off bf16; do
  timeout 300 tests/fabric/launch.sh --name cz --hosts 8 --timeout 280 -- \
      build/bench/osu/mccl_osu_allgather -m 16777216:16777216 -i 10 -x 2 -u 0 --compress $m "${D[@]}" -f > /tmp/s22/tr-$m.log 2>&1
  echo "train $m: $(grep -E '^\[h0\] 16777216' /tmp/s22/tr-$m.log)"
done
