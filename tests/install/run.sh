#!/usr/bin/env bash
# usage: run.sh <cmake> <generator> <mccl build dir> <consumer source dir> <work dir>
#               <c++ compiler> [sanitizer]
# Installs the MCCL build into <work dir>/prefix, builds the consumer against
# it with find_package(mccl), and runs it.
set -euo pipefail
cmake_bin=$1 generator=$2 build=$3 consumer=$4 work=$5 cxx=$6 sanitize=${7:-}

# Start from nothing, so a file left by an earlier install cannot hide a
# missing install rule.
rm -rf "$work"
mkdir -p "$work"
"$cmake_bin" --install "$build" --prefix "$work/prefix" >"$work/install.log"

"$cmake_bin" -S "$consumer" -B "$work/build" -G "$generator" -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCONSUMER_SANITIZE="$sanitize" >"$work/configure.log" \
  || { cat "$work/configure.log"; exit 1; }
"$cmake_bin" --build "$work/build" >"$work/build.log" || { cat "$work/build.log"; exit 1; }
"$work/build/consumer"

# Before 1.0 every minor version may break the API: asking for 0.0 must not
# find this 0.1 package.
if "$cmake_bin" -S "$consumer" -B "$work/build-old" -G "$generator" -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_CXX_COMPILER="$cxx" -DCONSUMER_WANT=0.0 >"$work/configure-old.log" 2>&1; then
  echo "find_package(mccl 0.0) accepted the installed package; 0.x must match its minor version" >&2
  exit 1
fi
grep -q "requested version \"0.0\"" "$work/configure-old.log" || { cat "$work/configure-old.log"; exit 1; }
