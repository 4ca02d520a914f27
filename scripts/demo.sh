#!/usr/bin/env bash
# Sets up the machine, builds and runs the demo: 8 ranks in one process over
# the in-memory fabric with 1% datagram loss. Extra arguments go to mccl_demo.
set -euo pipefail
cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."

scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build --target mccl_demo
exec build/tools/mccl_demo "$@"
