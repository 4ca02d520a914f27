#!/usr/bin/env bash
# run_fuzz.sh <fuzzer> <seconds> <work dir> <seed dir>: one bounded libFuzzer
# run from the checked-in seeds. New inputs go to the work dir (in the build
# tree), never into the source tree; a crash leaves its input there too and
# fails the test.
set -euo pipefail
fuzzer=$1 seconds=$2 work=$3 seeds=$4
mkdir -p "$work"
# -rss_limit_mb: the TCP reader may legitimately allocate a 1 GiB message
# buffer when a frame claims that length.
exec "$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=3072 \
  -print_final_stats=1 -artifact_prefix="$work/" "$work" "$seeds"
