#!/usr/bin/env bash
# mccl_run passes a signal that stops it on to every rank. Its ranks run in
# process groups of their own, so a terminal's Ctrl-C and timeout(1)'s
# SIGTERM reach mccl_run alone; before, they left every rank running with no
# parent. Passes when, after SIGTERM or SIGINT to mccl_run, mccl_run ends by
# that signal within a few seconds and none of its ranks is left, and when
# timeout(1) stopping mccl_run leaves no rank either.
#
#   mccl_run_signal_test.sh MCCL_RUN
set -uo pipefail
set -m  # background jobs in their own groups, SIGINT not ignored (as from a terminal)

run=${1:?usage: mccl_run_signal_test.sh MCCL_RUN}
fail() { echo "mccl_run_signal_test.sh: FAIL: $*"; exit 1; }

# alive PID...: prints those still running (zombies count as gone).
alive() {
  local p
  for p in "$@"; do
    [[ $(ps -o stat= -p "$p" 2>/dev/null) == Z* || -z $(ps -o pid= -p "$p" 2>/dev/null) ]] || echo "$p"
  done
}

for sig in TERM INT; do
  "$run" -n 3 -t 120 /bin/sleep 60 &
  launcher=$!
  ranks=()
  for _ in $(seq 200); do
    mapfile -t ranks < <(pgrep -P "$launcher")
    ((${#ranks[@]} == 3)) && break
    sleep 0.05
  done
  if ((${#ranks[@]} != 3)); then
    kill -KILL "$launcher"
    fail "SIG$sig: mccl_run did not start 3 ranks"
  fi
  kill -"$sig" "$launcher"
  for _ in $(seq 100); do
    [[ -z $(alive "$launcher") ]] && break
    sleep 0.1
  done
  if [[ -n $(alive "$launcher") ]]; then
    kill -KILL "$launcher" "${ranks[@]}"
    fail "SIG$sig: mccl_run still runs 10 s after the signal"
  fi
  rc=0
  wait "$launcher" || rc=$?
  left=$(alive "${ranks[@]}" | xargs)
  # shellcheck disable=SC2086  # $left: pids, one word each
  [[ -z $left ]] || { kill -KILL $left; fail "SIG$sig: ranks $left outlived mccl_run"; }
  expected=$((128 + $(kill -l "$sig")))
  ((rc == expected)) || fail "SIG$sig: mccl_run exited with $rc, not $expected"
  echo "mccl_run_signal_test.sh: SIG$sig: mccl_run ended by it ($rc), its 3 ranks with it"
done

# timeout(1), as a benchmark script uses it: a unique argument finds the ranks.
marker=$((60 + RANDOM % 1000)).5
rc=0
timeout 1 "$run" -n 2 -t 120 /bin/sleep "$marker" || rc=$?
((rc == 124)) || fail "timeout(1): exited with $rc, not 124"
sleep 0.5
left=$(pgrep -f "^/bin/sleep $marker\$" | tr '\n' ' ')
# shellcheck disable=SC2086  # $left: pids, one word each
[[ -z $left ]] || { kill -KILL $left; fail "timeout(1): ranks $left outlived mccl_run"; }
echo "mccl_run_signal_test.sh: timeout(1): no rank outlived mccl_run"
