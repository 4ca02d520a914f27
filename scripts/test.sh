#!/usr/bin/env bash
# Sets up the machine, builds, and runs every test: the main suite, then
# (scripts/sanitize.sh) the sanitizer builds and the short fuzz runs.
# Arguments go to ctest and run the main suite only, e.g.
#   scripts/test.sh -L unit
# MCCL_TEST_SANITIZE=0 skips the sanitizer and fuzz stages of a run without
# arguments; MCCL_TEST_SANITIZE=1 adds them to a run with arguments.
set -euo pipefail
cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."

scripts/setup.sh
scripts/build.sh
ctest --test-dir build --output-on-failure -j2 "$@"
if [[ ${MCCL_TEST_SANITIZE:-$([[ $# -eq 0 ]] && echo 1 || echo 0)} == 1 ]]; then
  scripts/sanitize.sh
fi
