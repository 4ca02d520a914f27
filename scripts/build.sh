#!/usr/bin/env bash
# Configures (Ninja, RelWithDebInfo, warnings as errors, ./build) and builds MCCL.
# Extra arguments go to the configure step, e.g. scripts/build.sh -DMCCL_SANITIZE=address
set -euo pipefail
cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMCCL_WERROR=ON "$@"
cmake --build build
