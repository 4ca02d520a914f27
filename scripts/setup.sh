#!/usr/bin/env bash
# Installs the Debian 12 packages MCCL needs, and only those that are missing.
# Idempotent and silent when everything is present; safe to run before every build.
set -euo pipefail

packages=(
  # build and test
  build-essential cmake ninja-build pkg-config libgtest-dev libgmock-dev libbenchmark-dev clang-format
  # the function-length check of src/ (cmake/CheckFunctionLength.cmake)
  universal-ctags
  # the sanitizer builds and fuzz targets of scripts/sanitize.sh (tests/fuzz)
  clang libfuzzer-14-dev
  # authentication of multicast datagrams (optional in CMake: MCCL_PROTO_AUTH):
  # the key agreement (libsodium) and the AES-256-GMAC tags (libcrypto)
  libsodium-dev libssl-dev
  # ZFP fixed-rate compression (optional in CMake: MCCL_COLL_COMPRESS=zfp)
  libzfp-dev
  # real transports and topology (cheap to have now, needed by later layers)
  libibverbs-dev librdmacm-dev rdma-core libucx-dev libhwloc-dev hwloc
  # the namespace fabric tests
  iproute2 nftables iputils-ping
  # MPI, for the namespace launcher and the side-by-side baselines; PMIx for
  # the PMIx bootstrap (mpirun/srun without MPI)
  openmpi-bin libopenmpi-dev mpich libmpich-dev libpmix-dev
  # mpi4py under libmccl_mpi (tests/mpi/mpi4py_app.py, docs/mpi.md)
  python3-mpi4py
  # plots of bench/fabric/run.sh
  python3-matplotlib
  # the torch.distributed backend (src/torch, tests/torch, bench/torch):
  # PyTorch 1.13 for /usr/bin/python3, its C++ headers, and pybind11's;
  # venv for the second run on PyTorch 2.x from PyPI (scripts/torch-pypi.sh)
  python3-torch libtorch-dev pybind11-dev python3-venv
  # `pip install .` of the backend, offline and without build isolation
  # (setup.py, docs/pytorch.md; test torch.pip)
  python3-pip python3-setuptools python3-wheel
  # the offload daemon's aarch64 cross build and its qemu-user smoke test
  # (offload.cross_aarch64_smoke; skips without them). The daemon needs no
  # target libraries beyond the cross toolchain's own libstdc++.
  g++-aarch64-linux-gnu qemu-user
)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [[ "$status" == installed ]] || missing+=("$p")
done
if [[ ${#missing[@]} -eq 0 ]]; then exit 0; fi

if [[ $(id -u) -ne 0 ]]; then
  echo "setup.sh: missing packages: ${missing[*]}" >&2
  echo "Install them with:" >&2
  echo "  sudo apt-get update && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${missing[*]}" >&2
  exit 1
fi

echo "setup.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
