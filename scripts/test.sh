#!/usr/bin/env bash
# Sets up the machine, builds, and runs every test: the main suite, then
# (scripts/sanitize.sh) the sanitizer builds and the short fuzz runs.
# The torch label runs on Debian's PyTorch 1.13 and on PyTorch 2.x from
# PyPI, in a venv that scripts/torch-pypi.sh makes once outside the source
# tree (MCCL_TORCH_PYPI=0: not made, the torch.pypi.* tests skip).
# Arguments go to ctest and run the main suite only, e.g.
#   scripts/test.sh -L unit
# MCCL_TEST_SANITIZE=0 skips the sanitizer and fuzz stages of a run without
# arguments; MCCL_TEST_SANITIZE=1 adds them to a run with arguments.
set -euo pipefail
cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."

scripts/setup.sh
torch_pypi=$(scripts/torch-pypi.sh)
scripts/build.sh "-DMCCL_TORCH_PYPI_PYTHON=$torch_pypi"
ctest --test-dir build --output-on-failure -j2 "$@"
if [[ ${MCCL_TEST_SANITIZE:-$([[ $# -eq 0 ]] && echo 1 || echo 0)} == 1 ]]; then
  scripts/sanitize.sh
fi
