#!/usr/bin/env bash
# Sets up the machine, builds, and runs every test. Extra arguments go to
# ctest, e.g. scripts/test.sh -L unit
set -euo pipefail
cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."

scripts/setup.sh
scripts/build.sh
ctest --test-dir build --output-on-failure -j2 "$@"
