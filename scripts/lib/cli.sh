# shellcheck shell=bash
# Shared by the project's command-line scripts (source it after setting PROG):
# the exit conventions (1 error, 2 usage, 77 skip, as CTest reads them), the
# usage text taken from the script's own header comment, and sizes with k/m
# suffixes.

die() { echo "$PROG: $*" >&2; exit 1; }
usage_die() { echo "$PROG: $*" >&2; echo "run '$PROG --help' for usage" >&2; exit 2; }
skip() { echo "$PROG: SKIP: $*" >&2; exit 77; }
# "a,b,c" -> "a b c", for options that take a comma-separated list.
list_of() { tr ',' ' ' <<<"$1"; }
# The comment block from line 2 down to `set -euo`, without the `# `.
usage() { sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; }

# size_of "16m" -> 16777216 (k = KiB, m = MiB); a usage error otherwise.
size_of() {
  local s=${1,,} mult=1
  case $s in
    *k) mult=1024; s=${s%k} ;;
    *m) mult=1048576; s=${s%m} ;;
  esac
  [[ $s =~ ^[0-9]+$ ]] || usage_die "bad size '$1'"
  echo $((10#$s * mult))
}
