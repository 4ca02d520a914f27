base=$1 new=$2 reps=$3
echo "# $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)"
no_daemon() { for _ in $(seq 50); do pgrep -f "mccl_offloadd --socket" >/dev/null || return 0; sleep 0.2; done; }
for rep in $(seq $reps); do
  order="$base $new"; ((rep % 2 == 0)) && order="$new $base"
  for b in $order; do
    no_daemon
    r=$(MCCL_PROGRESS=offload timeout 200 "$b/tools/mccl_run" -n 2 -t 180 "$b/bench/osu/mccl_osu_bcast" -m 4194304:16777216 -i 20 -x 3 2>&1 | awk '/^[0-9]+ /{printf "%d:%s ", $1 / 1048576, $2}')
    name=new; [[ $b == "$base" ]] && name=base
    echo "$rep bcast offload $name $r"
  done
done
