#!/usr/bin/env bash
# launch.sh — run one process per host namespace of a cluster made by cluster.sh.
#
#   launch.sh --name NAME [--hosts N] [--timeout S] [--grace S] [--port P]
#             [--env K=V]... [--logdir DIR] -- program args...
#   launch.sh --mpirun --name NAME [--hosts N] [--ranks R] [--placement block|cyclic]
#             [--timeout S] [--env K=V]... [--mpirun-arg ARG]... [--logdir DIR]
#             -- program args...
#
# Direct mode: rank i runs in NAME-h<i> with MCCL_RANK=i, MCCL_WORLD_SIZE=N,
# MCCL_BOOTSTRAP_ADDR=10.201.0.1:PORT (rank 0's address; PORT random in 20000-32767
# unless --port), MCCL_UDP_RATE_MBIT=<the links' TBF rate> (when
# the cluster has one), then every --env (which may override those). The rate is
# passed because a veth reports 10 Gbit/s whatever its rate limiter allows, and
# MCCL paces its senders to the link rate (shared by allgather roots sending at
# once): on a cluster whose interfaces misreport their speed a user sets it so too.
# No MCCL_UDP_IFACE: the ranks find veth0 themselves (MCCL_UDP_IFACE=auto), as on
# a real cluster; --env MCCL_UDP_IFACE=... names one.
# Each rank is its own process group (setsid). When any rank exits non-zero, or the
# overall --timeout (default 120 s) expires, every rank's process group gets SIGTERM,
# then SIGKILL after --grace (default 2 s) seconds.
#
# --mpirun mode: runs Open MPI's mpirun.openmpi inside the switch namespace NAME-sw
# (the PMIx server must be reachable from the host namespaces over 10.201.0.0/24) with
# TCP-only transports, and starts each rank through netns-wrap.sh into NAME-h<rank>.
# Ranks get MCCL_BOOTSTRAP_ADDR=10.201.0.1:PORT (rank 0 runs in NAME-h0)
# and the --env values, but no MCCL_RANK / MCCL_WORLD_SIZE: MCCL
# reads those from OMPI_COMM_WORLD_RANK / OMPI_COMM_WORLD_SIZE. --mpirun-arg adds an
# argument to mpirun's command line (repeatable). --ranks R (default: one per host)
# starts R ranks, several per host namespace when R > N: --placement block (default)
# puts rank r in host r / ceil(R/N) (consecutive ranks share a host), cyclic in host
# r mod N (round robin: a host's ranks are not consecutive). Ranks sharing a host
# talk over TCP inside its namespace (kernel loopback): nothing of theirs crosses
# the host's veth0.
#
# Every process started carries MCCL_FABRIC_LAUNCH_ID=<unique id>; at the end any
# process still carrying it (e.g. one that left its process group) is killed by PID.
#
# Output: each rank's stdout+stderr, after the run, one line at a time prefixed
# "[h<i>] " (i: the rank; mpirun's own output as "[mpirun] "). --logdir DIR keeps the raw logs as
# DIR/rank<i>.log. Exit: 0 all ranks succeeded; 124 timeout; else the first failing
# rank's exit code (or mpirun's); 77 not root / tool missing; 2 usage.
set -euo pipefail

PROG=launch.sh
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
readonly SUBNET=10.201.0.0/24
readonly RANK0_ADDR=10.201.0.1

die() { echo "$PROG: $*" >&2; exit 1; }
usage_die() { echo "$PROG: $*" >&2; echo "run '$PROG --help' for usage" >&2; exit 2; }
skip() { echo "$PROG: SKIP: $*" >&2; exit 77; }
usage() { sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; }

name="" hosts="" ranks="" placement=block timeout=120 grace=2 port="" logdir="" mpirun=0
envs=() mpirun_args=() prog=()
while (($#)); do
  case $1 in
    -h | --help) usage; exit 0 ;;
    --name) name=${2-}; shift 2 ;;
    --hosts) hosts=${2-}; shift 2 ;;
    --ranks) ranks=${2-}; shift 2 ;;
    --placement) placement=${2-}; shift 2 ;;
    --timeout) timeout=${2-}; shift 2 ;;
    --grace) grace=${2-}; shift 2 ;;
    --port) port=${2-}; shift 2 ;;
    --env) envs+=("${2-}"); shift 2 ;;
    --logdir) logdir=${2-}; shift 2 ;;
    --mpirun) mpirun=1; shift ;;
    --mpirun-arg) mpirun_args+=("${2-}"); shift 2 ;;
    --) shift; prog=("$@"); break ;;
    *) usage_die "unknown argument '$1'" ;;
  esac
done

[[ $name =~ ^[A-Za-z][A-Za-z0-9]{0,10}$ ]] || usage_die "--name NAME is required (as given to cluster.sh)"
((${#prog[@]})) || usage_die "missing -- program args..."
if ! [[ $timeout =~ ^[0-9]+(\.[0-9]+)?$ ]] || [[ $timeout =~ ^0+(\.0+)?$ ]]; then usage_die "bad --timeout '$timeout'"; fi
[[ $grace =~ ^[0-9]+(\.[0-9]+)?$ ]] || usage_die "bad --grace '$grace'"
if [[ -n $port ]]; then
  if ! [[ $port =~ ^[0-9]{1,5}$ ]] || ((10#$port < 1 || 10#$port > 65535)); then usage_die "bad --port '$port'"; fi
else
  port=$((20000 + RANDOM % 12768)) # below the ephemeral range (32768+)
fi
for kv in "${envs[@]}"; do
  [[ $kv =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || usage_die "bad --env '$kv' (want K=V)"
done
if ((BASH_VERSINFO[0] < 5 || (BASH_VERSINFO[0] == 5 && BASH_VERSINFO[1] < 1))); then
  skip "needs bash >= 5.1 (wait -n -p)"
fi

[[ $(id -u) -eq 0 ]] || skip "must run as root (ip netns exec)"
command -v ip >/dev/null 2>&1 || skip "missing tool: ip (apt-get install iproute2)"
command -v setsid >/dev/null 2>&1 || skip "missing tool: setsid (apt-get install util-linux)"

existing=$(ip netns list 2>/dev/null | awk '{print $1}')
has_ns() { grep -qxF "$1" <<<"$existing"; }
if [[ -z $hosts ]]; then
  hosts=0
  while has_ns "$name-h$hosts"; do hosts=$((hosts + 1)); done
  ((hosts > 0)) || die "no cluster named $name (run cluster.sh up --name $name ...)"
fi
if ! [[ $hosts =~ ^[0-9]+$ ]] || ((10#$hosts < 1)); then usage_die "bad --hosts '$hosts'"; fi
hosts=$((10#$hosts))
[[ -n $ranks ]] || ranks=$hosts
if ! [[ $ranks =~ ^[0-9]+$ ]] || ((10#$ranks < 1)); then usage_die "bad --ranks '$ranks'"; fi
ranks=$((10#$ranks))
[[ $placement == block || $placement == cyclic ]] || usage_die "bad --placement '$placement' (block or cyclic)"
((ranks == hosts || mpirun)) || usage_die "--ranks differs from --hosts: only with --mpirun"
for ((i = 0; i < hosts; i++)); do
  has_ns "$name-h$i" || die "namespace $name-h$i does not exist (cluster $name has fewer hosts, or is not up)"
done

if ((mpirun)); then
  MPIRUN=$(command -v mpirun.openmpi || true)
  [[ -n $MPIRUN ]] || skip "Open MPI not installed: apt-get install openmpi-bin libopenmpi-dev"
  has_ns "$name-sw" || die "namespace $name-sw does not exist"
fi

rate_env=()
rate=$("$HERE/cluster.sh" rate --name "$name")
[[ -z $rate ]] || rate_env=("MCCL_UDP_RATE_MBIT=$rate")

exec 3>&2
launch_id="$name.$$.$RANDOM$RANDOM"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mccl-launch.XXXXXX")
if [[ -n $logdir ]]; then
  mkdir -p "$logdir"
  tmp_is_logdir=0
else
  logdir=$tmp
  tmp_is_logdir=1
fi

pids=()    # leader PID (= process group ID) per slot
labels=()  # "h<i>" or "mpirun"
logs=()
declare -A live=() # pid -> slot
status=()

# groups_alive: succeeds while any of our process groups has a member that is not a
# zombie (kill -0 would also count our own unreaped rank leaders).
groups_alive() {
  ps -e -o pgid=,stat= 2>/dev/null | awk -v list=" ${pids[*]} " '
    index(list, " " $1 " ") && $2 !~ /^Z/ { found = 1 } END { exit !found }'
}

kill_all() {
  local pid t any=0 ticks
  for pid in "${pids[@]}"; do
    if kill -TERM -- "-$pid" 2>/dev/null; then any=1; fi
  done
  if ((any)); then
    ticks=$(awk -v g="$grace" 'BEGIN { printf "%d", g * 10 }')
    for ((t = 0; ; t++)); do
      groups_alive || break
      if ((t >= ticks)); then
        for pid in "${pids[@]}"; do kill -KILL -- "-$pid" 2>/dev/null || true; done
        break
      fi
      sleep 0.1
    done
  fi
  # Anything that left its process group but still carries our launch id.
  local f strays=()
  while IFS= read -r f; do
    f=${f#/proc/}
    f=${f%/environ}
    [[ $f == "$$" ]] || strays+=("$f")
  done < <(grep -lzxF "MCCL_FABRIC_LAUNCH_ID=$launch_id" /proc/[0-9]*/environ 2>/dev/null || true)
  if ((${#strays[@]})); then
    echo "$PROG: killing stray processes ${strays[*]}" >&3
    kill -KILL "${strays[@]}" 2>/dev/null || true
  fi
}

reap_all() { # collect exit statuses of whatever we have not waited for yet
  local pid rc
  for pid in "${!live[@]}"; do
    rc=0
    wait "$pid" 2>/dev/null || rc=$?
    status[${live[$pid]}]=$rc
    unset "live[$pid]"
  done
}

timer=""
cleanup() {
  [[ -z $timer ]] || kill "$timer" 2>/dev/null || true
  # stderr muted: bash's own "Killed ..." job notices; our messages use fd 3.
  {
    kill_all
    reap_all
  } 2>/dev/null
  if ((tmp_is_logdir == 0)); then rm -rf "$tmp"; fi
  return 0
}
# shellcheck disable=SC2317  # invoked from traps
on_exit() {
  cleanup
  rm -rf "$tmp"
}
# shellcheck disable=SC2317
on_signal() {
  echo "$PROG: interrupted; killing all ranks" >&2
  trap - EXIT
  on_exit
  exit "$1"
}
trap on_exit EXIT
trap 'on_signal 130' INT
trap 'on_signal 143' TERM
trap 'on_signal 129' HUP

# start LABEL LOG cmd... : start cmd as the leader of a new process group.
start() {
  local label=$1 log=$2
  shift 2
  # Not a group leader (no job control in scripts), so setsid does not fork: $! is the
  # program's PID and its process group ID.
  setsid "$@" </dev/null >"$log" 2>&1 &
  local slot=${#pids[@]}
  pids+=("$!")
  labels+=("$label")
  logs+=("$log")
  live[$!]=$slot
  status+=("")
}

# One random job secret for the launch, as mccl_run gives its ranks: without
# it rank 0 generates one in a file of /tmp/mccl-<uid>, which stays behind
# when a test kills rank 0 (docs/security.md).
secret=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')

if ((mpirun)); then
  mpi_env=(-x "MCCL_BOOTSTRAP_ADDR=$RANK0_ADDR:$port" -x "MCCL_BOOTSTRAP_SECRET=$secret"
    -x "MCCL_FABRIC_LAUNCH_ID=$launch_id" -x "MCCL_FABRIC_LOG_DIR=$logdir"
    -x "MCCL_FABRIC_HOSTS=$hosts" -x "MCCL_FABRIC_PLACEMENT=$placement")
  for kv in "${rate_env[@]}"; do mpi_env+=(-x "$kv"); done
  for kv in "${envs[@]}"; do mpi_env+=(-x "$kv"); done
  start mpirun "$logdir/mpirun.log" \
    ip netns exec "$name-sw" env "MCCL_FABRIC_LAUNCH_ID=$launch_id" "PMIX_MCA_ptl_base_if_include=$SUBNET" \
    "$MPIRUN" --allow-run-as-root --oversubscribe -np "$ranks" \
    --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include "$SUBNET" --mca oob_tcp_if_include "$SUBNET" \
    "${mpi_env[@]}" "${mpirun_args[@]}" \
    "$HERE/netns-wrap.sh" "$name" "${prog[@]}"
else
  for ((i = 0; i < hosts; i++)); do
    start "h$i" "$logdir/rank$i.log" \
      ip netns exec "$name-h$i" env \
      "MCCL_RANK=$i" "MCCL_WORLD_SIZE=$hosts" "MCCL_BOOTSTRAP_ADDR=$RANK0_ADDR:$port" \
      "MCCL_BOOTSTRAP_SECRET=$secret" \
      "MCCL_FABRIC_LAUNCH_ID=$launch_id" "${rate_env[@]}" "${envs[@]}" \
      "${prog[@]}"
  done
fi

sleep "$timeout" &
timer=$!

timed_out=0 failed_slot=""
while ((${#live[@]})); do
  done_pid="" rc=0
  wait -n -p done_pid "${!live[@]}" "$timer" || rc=$?
  if [[ -z $done_pid ]]; then
    break # nothing left to wait for
  elif [[ $done_pid == "$timer" ]]; then
    timer=""
    timed_out=1
    break
  fi
  slot=${live[$done_pid]}
  unset "live[$done_pid]"
  status[slot]=$rc
  if ((rc != 0)); then
    failed_slot=$slot
    break
  fi
done

running=()
for slot in "${live[@]}"; do running+=("${labels[slot]}"); done
trap - EXIT
cleanup

# Print every log, prefixed, in rank order (mpirun's own output last).
if ((mpirun)); then
  for ((i = 0; i < ranks; i++)); do
    [[ ! -f $logdir/rank$i.log ]] || sed "s/^/[h$i] /" "$logdir/rank$i.log"
  done
fi
for slot in "${!pids[@]}"; do
  sed "s/^/[${labels[slot]}] /" "${logs[slot]}"
done
rm -rf "$tmp" # (the same as logdir unless --logdir was given)

if ((timed_out)); then
  echo "$PROG: timeout after ${timeout}s; still running then: ${running[*]:-none}" >&2
  exit 124
fi
if [[ -n $failed_slot ]]; then
  rc=${status[failed_slot]}
  echo "$PROG: ${labels[failed_slot]} exited with status $rc; killed: ${running[*]:-none}" >&2
  exit "$rc"
fi
exit 0
