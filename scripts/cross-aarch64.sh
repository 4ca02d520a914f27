#!/usr/bin/env bash
# Cross-builds mccl_offloadd for aarch64 (a BlueField's Arm cores) with
# Debian's g++-aarch64-linux-gnu and, with --smoke, runs it under
# qemu-aarch64: --version, --self-test-rings (shared rings and descriptor
# passing), --self-test-sim (three ranks over the in-memory fabric with
# loss: the protocol, repairs and reduction kernels as built for aarch64)
# and --self-test (one rank over UDP loopback multicast and TCP; qemu-user
# lacks a multicast socket option, so that one may only be noted).
#
#   scripts/cross-aarch64.sh [--smoke] [BUILD_DIR]   (default build-aarch64)
#
# The daemon is built from src/offload/CMakeLists.txt as a project of its
# own: common, transport/udp, transport/tcp, protocol, coll. No hwloc, UCX,
# PMIx, rdma-core or GoogleTest is needed for the target.
# Exit 77 (CTest: skipped) when the cross compiler or qemu is missing.
set -euo pipefail
smoke=0
if [[ "${1:-}" == "--smoke" ]]; then
  smoke=1
  shift
fi
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build-aarch64}"

if ! command -v aarch64-linux-gnu-g++ >/dev/null; then
  echo "skip: aarch64-linux-gnu-g++ not found (apt-get install g++-aarch64-linux-gnu)"
  exit 77
fi
if [[ $smoke == 1 ]] && ! command -v qemu-aarch64 >/dev/null; then
  echo "skip: qemu-aarch64 not found (apt-get install qemu-user)"
  exit 77
fi
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
# The smoke build runs the optimised code once and is thrown away: no debug
# information, which was a quarter of its compile (CI's test suite runs it).
flags=()
[[ $smoke == 1 ]] && flags=("-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -DNDEBUG"
  "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -DNDEBUG")
cmake -S "$root/src/offload" -B "$build" "${gen[@]}" "${launcher[@]}" "${flags[@]}" \
  -DCMAKE_TOOLCHAIN_FILE="$root/cmake/aarch64-toolchain.cmake" -DMCCL_WERROR=ON >/dev/null
cmake --build "$build" --target mccl_offloadd -j "$(nproc)"
exe="$build/mccl_offloadd"
file "$exe" 2>/dev/null | grep -q aarch64 || { echo "not an aarch64 binary: $exe"; exit 1; }
echo "built $exe"
if [[ $smoke == 1 ]]; then
  qemu=(qemu-aarch64 -L /usr/aarch64-linux-gnu)
  "${qemu[@]}" "$exe" --version
  timeout 60 "${qemu[@]}" "$exe" --self-test-rings
  timeout 120 "${qemu[@]}" "$exe" --self-test-sim
  # The network self-test needs IP multicast socket options, which
  # qemu-user does not translate everywhere (IP_MULTICAST_IF: ENOPROTOOPT):
  # reported, fatal only when it fails for another reason.
  if ! out="$(timeout 120 "${qemu[@]}" "$exe" --self-test 2>&1)"; then
    echo "$out"
    if grep -q ENOPROTOOPT <<<"$out"; then
      echo "note: the UDP self-test needs a real aarch64 host (qemu-user lacks the socket option)"
    else
      exit 1
    fi
  else
    echo "$out"
  fi
fi
