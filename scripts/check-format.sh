#!/usr/bin/env bash
# Checks that every tracked C and C++ file is formatted as .clang-format says.
# Exit 0 clean, 1 with the offending files listed, 77 when clang-format or
# git (a checkout) is missing. `scripts/check-format.sh --fix` rewrites them.
set -euo pipefail
cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."

command -v clang-format >/dev/null || { echo "skip: clang-format not installed (scripts/setup.sh installs it)"; exit 77; }
git rev-parse --is-inside-work-tree >/dev/null 2>&1 || { echo "skip: not a git checkout"; exit 77; }

mapfile -t files < <(git ls-files -- '*.c' '*.cc' '*.h')
if [[ ${1-} == --fix ]]; then
  clang-format -i "${files[@]}"
  exit 0
fi
bad=$(clang-format --dry-run "${files[@]}" 2>&1 | sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: warning.*/\1/p' | sort -u)
if [[ -n $bad ]]; then
  echo "not clang-format clean (run scripts/check-format.sh --fix):"
  echo "$bad"
  exit 1
fi
echo "${#files[@]} files clang-format clean"
