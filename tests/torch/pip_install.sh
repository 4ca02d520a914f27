#!/usr/bin/env bash
# The torch backend installed the way Python users install one (label
# torch, test torch.pip): a fresh copy of the source tree, `pip install
# --no-build-isolation --no-index .` into a throwaway venv, then, from
# another directory and without PYTHONPATH, installed_check.py (the module
# comes from site-packages; PyTorch >= 2.5 loaded it on `import torch`) and
# test_collectives.py on the installed module.
#
#   pip_install.sh SOURCE_DIR WORK_DIR [PYPI_PYTHON]
#
# 1. Debian's PyTorch: a venv of /usr/bin/python3 with --system-site-packages
#    (Debian's torch, setuptools, wheel and pip); never the system itself.
# 2. With PYPI_PYTHON (the PyTorch 2.x venv of scripts/torch-pypi.sh): a
#    venv of /usr/bin/python3 that sees that venv's site-packages through a
#    .pth file (its torch, pip and setuptools), so the same source copy is
#    installed against PyTorch 2.x. Its CMake tree is the first one's: only
#    the module is compiled again.
set -euo pipefail
src=$(cd "$1" && pwd)
work=$2
pypi=${3:-}
tests=$(cd "$(dirname "$0")" && pwd)

rm -rf "$work"
mkdir -p "$work/src" "$work/run"
if git -C "$src" rev-parse --git-dir > /dev/null 2>&1; then
  (cd "$src" && git ls-files -co --exclude-standard -z | tar --null -cf - -T -) |
    tar -xf - -C "$work/src"
else
  tar -C "$src" --exclude='./build*' --exclude='./.git' -cf - . | tar -xf - -C "$work/src"
fi
export MCCL_PIP_JOBS=${MCCL_PIP_JOBS:-2}
# -O1 for the package's Release build: this test checks how the package is
# built, installed and loaded, not the code's speed (the main build runs the
# same code at -O2), and its compile was the longest test of the suite
# (523 s of CI's 1,053 s, 2026-11-30). The source has no assert() for
# NDEBUG to remove.
MCCL_PIP_CMAKE_ARGS="-DCMAKE_CXX_FLAGS_RELEASE=-O1 -DCMAKE_C_FLAGS_RELEASE=-O1"
if command -v ccache > /dev/null; then
  MCCL_PIP_CMAKE_ARGS+=" -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache"
fi
export MCCL_PIP_CMAKE_ARGS
unset PYTHONPATH

install_and_check() {  # VENV_PYTHON WHAT
  echo "pip_install.sh: installing into $2" >&2
  (cd "$work/src" && "$1" -m pip install --no-build-isolation --no-index --no-deps -q .)
  cd "$work/run"  # not the source tree: nothing found by accident
  "$1" -W ignore::UserWarning "$tests/installed_check.py"
  "$1" -W ignore::UserWarning "$tests/test_collectives.py" 200
}

/usr/bin/python3 -m venv --system-site-packages --without-pip "$work/debian"
install_and_check "$work/debian/bin/python" "a venv of Debian's PyTorch"

if [[ -n "$pypi" ]]; then
  /usr/bin/python3 -m venv --without-pip "$work/pypi"
  site=$("$pypi" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  mine=$("$work/pypi/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  echo "$site" > "$mine/torch-pypi.pth"
  install_and_check "$work/pypi/bin/python" "a venv of PyTorch from PyPI"
fi
