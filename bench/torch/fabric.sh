#!/usr/bin/env bash
# bench/torch/fabric.sh — bench_torch.py with one rank per host of the
# namespace cluster (tests/fabric): rate-limited links, a bridge as the switch,
# so the mccl backend's multicast and gloo's point-to-point traffic both cross
# a link per host, and the bytes are each host's own veth0.
#
#   bench/torch/fabric.sh [--hosts 4] [--rate 1gbit] [--build-dir build]
#                         [-- bench_torch.py options, e.g. --sizes 1m,4m --iters 5 --out F]
#
# Needs root and network namespaces (exits 77 otherwise, as the fabric tests
# do); run it on an idle machine and record the load average (each row has it).
set -euo pipefail
BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$BENCH/../.." && pwd)
FABRIC=$ROOT/tests/fabric
PYTHON=/usr/bin/python3 # Debian's, with python3-torch: another may come first on PATH

hosts=4 rate=1gbit build=$ROOT/build
while (($#)); do
  case $1 in
    --hosts) hosts=$2 && shift 2 ;;
    --rate) rate=$2 && shift 2 ;;
    --build-dir) build=$(cd "$2" && pwd) && shift 2 ;;
    --) shift && break ;;
    *) echo "usage: $0 [--hosts N] [--rate R] [--build-dir DIR] [-- bench_torch.py options]" >&2 && exit 2 ;;
  esac
done
module_dir=$build/src/torch
compgen -G "$module_dir/mccl_torch*.so" >/dev/null ||
  { echo "fabric.sh: no mccl_torch module in $module_dir (build where torch is installed)" >&2 && exit 1; }

# shellcheck disable=SC2034 # own_cluster.sh finds cluster.sh in HERE
HERE=$FABRIC
# shellcheck source=tests/fabric/own_cluster.sh
source "$FABRIC/own_cluster.sh"
own_cluster bench-torch bt "$hosts" --rate "$rate"

# Rank 0 prints the table and the JSON lines (every rank's output where the
# run fails); --timeout covers torch's start in every namespace plus the
# sizes asked for. gloo would take the address the host name resolves to
# (loopback in a namespace): it is told the link.
rc=0
"$FABRIC/launch.sh" --name "$NAME" --hosts "$hosts" --timeout 1500 \
  --env PYTHONPATH="$module_dir" --env GLOO_SOCKET_IFNAME=veth0 -- \
  "$PYTHON" -W ignore::UserWarning "$BENCH/bench_torch.py" --launched "$@" >"$TMP/out" 2>&1 || rc=$?
if ((rc == 0)); then sed -n 's/^\[h0\] //p' "$TMP/out"; else cat "$TMP/out"; fi
exit "$rc"
