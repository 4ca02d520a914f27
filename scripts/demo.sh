#!/usr/bin/env bash
# Sets up the machine, builds and runs the demo: 4 processes on this host
# broadcast and allgather over UDP multicast on loopback (repairs over TCP),
# printing latency and the bytes each rank sent next to what a ring would.
# Extra arguments go to mccl_run (e.g. -x MCCL_PROGRESS=thread).
set -euo pipefail
cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."

scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build --target mccl_demo mccl_run
exec build/tools/mccl_run -n 4 -t 300 "$@" build/tools/mccl_demo
