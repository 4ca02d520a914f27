# Sourced by the fabric test scripts: pass/fail bookkeeping with timestamps.
# The sourcing script sets TMP (a scratch directory) before calling check,
# and CHECK_VERBOSE (non-empty: show a passing check's output too).

passed=0 failed=0
T0=$EPOCHREALTIME
now() { awk -v a="$T0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%6.2f", b - a }'; }
ok() { passed=$((passed + 1)); echo "[$(now)s] PASS: $*"; }
bad() { failed=$((failed + 1)); echo "[$(now)s] FAIL: $*"; }

# check DESC CMD...: runs CMD; its stdout and stderr are shown only when it
# fails (or with CHECK_VERBOSE). Not in a subshell: CMD may set globals.
check() {
  local desc=$1 rc=0
  shift
  "$@" >"$TMP/check.out" 2>&1 || rc=$?
  if ((rc == 0)); then ok "$desc"; else
    bad "$desc"
    sed 's/^/    /' "$TMP/check.out"
  fi
  if [[ -n ${CHECK_VERBOSE:-} && $rc == 0 ]]; then sed 's/^/    | /' "$TMP/check.out"; fi
}
