# What commands.sh and commands2.sh share: the output folders, the runner, one
# run.sh per compressed case, and the sizes (SMOKE=1 shrinks them).
O=${OUT:?} W=/tmp/devout
mkdir -p $W
R=(bash .devbench/run.sh)
B=${B:-.devbench/build}
S=${SMOKE:-0}
big() { [ "$S" = 1 ] && echo "$2" || echo "$1"; }
{ lscpu; echo; uptime; uname -a; } >$O/machine.txt 2>&1
part() { local name=$1 limit=$2; shift 2; mkdir -p $W/$name
  echo "=== $name $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)"
  timeout -k 5 "$limit" "$@" >$W/$name/console.log 2>&1; local rc=$?
  echo "=== $name rc=$rc $(date -u +%T)"; tar czf $O/$name.tgz -C $W $name; }

# one run.sh per case: "label bench size compress-mode [extra run.sh args]"
cases() { local dir=$1 ranks=$2 rate=$3; shift 3
  for c in "$@"; do read -r label bench size mode extra <<<"$c"
    echo "=== $label $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)"
    bench/fabric/run.sh --ranks $ranks --rate $rate --impls mccl --scaling-ranks none --budget 1 \
      --no-plots --build-dir $B --label $label --out $W/$dir/$label --benches $bench --sizes $size \
      --osu-arg --compress --osu-arg $mode $extra >$W/$dir/$label.log 2>&1
    echo "rc=$?"; grep -E '^(allgather|reduce_scatter|ag_rs)' $W/$dir/$label/summary.txt; done; }
export -f cases; export B W S

M=$(big 16m 256k) RS=$(big 128m 1m) N=$(big 8 4) N32=$(big 32 4) M32=$(big 1m 64k)
