#!/usr/bin/env bash
# Makes, once, the Python environment in which the torch backend is also
# built and tested against the current PyTorch 2.x from PyPI (beside
# Debian's PyTorch 1.13 of /usr/bin/python3): a venv of /usr/bin/python3
# outside the source tree, $MCCL_TORCH_PYPI_VENV or by default
# ${XDG_CACHE_HOME:-~/.cache}/mccl/torch-pypi, with `pip install torch numpy`
# (torch.distributed's object collectives need numpy, which torch does not
# bring).
# Debian's own Python is never installed into. Prints the venv's python;
# scripts/test.sh passes it to CMake (MCCL_TORCH_PYPI_PYTHON).
#
# Where PyPI cannot be reached the venv is left without torch and its file
# why-no-torch says why: the torch.pypi.* tests then skip with that reason.
# MCCL_TORCH_PYPI=0 makes nothing and prints nothing (the tests skip too).
# Once torch imports, nothing is downloaded again; delete the venv to move
# to a newer PyTorch.
set -euo pipefail

if [[ ${MCCL_TORCH_PYPI:-1} == 0 ]]; then
  echo "torch-pypi.sh: MCCL_TORCH_PYPI=0: no venv with PyTorch from PyPI" >&2
  exit 0
fi
venv=${MCCL_TORCH_PYPI_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/mccl/torch-pypi}
python=$venv/bin/python
# The module is built with /usr/bin/python3's headers (src/torch/CMakeLists.txt),
# so the venv must be of that interpreter.
base=/usr/bin/python3

if [[ -x $python ]] && "$python" -c 'import torch, numpy' 2>/dev/null; then
  echo "$python"
  exit 0
fi
# no_torch REASON: the skip reason of the torch.pypi.* tests.
no_torch() {
  echo "torch-pypi.sh: no PyTorch from PyPI: $*" >&2
  echo "$*" >"$venv/why-no-torch"
  echo "$python"
  exit 0
}

mkdir -p "$venv"
if [[ ! -x $python ]]; then
  "$base" -m venv "$venv" || no_torch "$base -m venv failed (Debian: python3-venv)"
fi
rm -f "$venv/why-no-torch"
echo "torch-pypi.sh: installing PyTorch 2.x from PyPI into $venv (once; about 5 GB with its CUDA libraries)" >&2
log=$venv/pip-install.log
# PyPI's Linux wheels bring CUDA's libraries too; the CPU-only wheels live
# on download.pytorch.org, tried first (briefly) where it can be reached.
start=$SECONDS
pip_install() { "$python" -m pip install --no-cache-dir --no-compile "$@" 'torch>=2,<3' numpy >"$log" 2>&1; }
if ! pip_install --retries 1 --timeout 15 --index-url https://download.pytorch.org/whl/cpu &&
  ! pip_install --retries 2 --timeout 60; then
  no_torch "pip install torch failed (is PyPI reachable?): $(grep -v '^\s*$' "$log" | tail -n 1)"
fi
"$python" -c 'import torch, numpy' 2>>"$log" || no_torch "torch was installed but does not import (see $log)"
echo "torch-pypi.sh: torch $("$python" -c 'import torch; print(torch.__version__)') installed in $((SECONDS - start)) s" >&2
echo "$python"
