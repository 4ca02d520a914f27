#!/usr/bin/env bash
# gpu_machine.sh — the torch backend on a lent GPU machine: its PyTorch 2.x with CUDA,
# the tests with CUDA tensors (FSDP1, FSDP2 and a torch.compile'd step among them).
#
#   tests/torch/gpu_machine.sh pack [BUILD_DIR]            # here, after
#                                                          # ../shared/devbench/prepare.sh
#   bash .devbench/run.sh tests/torch/gpu_machine.sh run OUT_DIR [TEST...]   # there
#
# That machine has PyTorch, Python's headers and a compiler, but not MCCL's build
# dependencies (hwloc, libsodium, ...), so libmccl comes built from here, packed into
# .devbench/ by prepare.sh; `pack` adds what the module compiles and links against
# besides (the generated version header, libmccl_common.a without debug information).
# `run` compiles src/torch/*.cc with /usr/bin/g++ against the torch that `python3`
# imports, as src/torch/CMakeLists.txt does (the image's default compiler links
# libstdc++ statically, and a module built so crashes beside torch), then runs each
# TEST (default: cuda fsdp collectives operations) as tests/torch/test_TEST.py with
# the module on PYTHONPATH, each under its own deadline.
# Output: OUT_DIR/build.log, OUT_DIR/TEST.log, OUT_DIR/torch.txt (versions, GPU) and
# one line per test on stdout: "torch TEST: passed|FAILED (rc N)|skipped, S s".
# Exit: 0 every test passed or skipped, 1 a test failed, 2 usage or the build failed.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
pack=$root/.devbench/torch

case ${1-} in
  pack)
    build=$(cd "${2:-$root/build}" && pwd) || exit 2
    [[ -d $root/.devbench/build ]] || { echo "run ../shared/devbench/prepare.sh first" >&2; exit 2; }
    rm -rf "$pack" && mkdir -p "$pack/include"
    cp -rL "$build/include/." "$pack/include/"
    strip --strip-debug -o "$pack/libmccl_common.a" "$build/src/common/libmccl_common.a"
    du -sh "$pack"
    exit 0 ;;
  run) out=${2:?usage: gpu_machine.sh run OUT_DIR [TEST...]}; shift 2 ;;
  *) echo "usage: gpu_machine.sh pack [BUILD_DIR] | run OUT_DIR [TEST...]" >&2; exit 2 ;;
esac

mkdir -p "$out"
tests=("$@")
((${#tests[@]})) || tests=(cuda fsdp collectives operations)
py=$(command -v python3)
mod=$(mktemp -d /tmp/mccl-torch-module.XXXXXX)

# What CMake would find (src/torch/find_torch.py), as shell variables.
declare -A torch
while IFS='=' read -r k v; do torch[$k]=$v; done < <("$py" "$root/src/torch/find_torch.py")
[[ -n ${torch[version]-} ]] || { echo "python3 ($py) imports no usable torch" >&2; exit 2; }
pyinc=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
suffix=$("$py" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
[[ -f $pyinc/Python.h ]] || { echo "no Python.h in $pyinc (Python's headers)" >&2; exit 2; }
{
  echo "python: $py ($("$py" --version 2>&1)), torch ${torch[version]}, cxx11_abi ${torch[cxx11_abi]}"
  "$py" -c 'import torch; print("cuda:", torch.version.cuda, "devices:", torch.cuda.device_count(),
            [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())])'
  /usr/bin/g++ --version | head -n 1
} >"$out/torch.txt" 2>&1
cat "$out/torch.txt"

flags=(-std=c++20 -O2 -fPIC -fvisibility=hidden -fvisibility-inlines-hidden -DNDEBUG
  "-D_GLIBCXX_USE_CXX11_ABI=${torch[cxx11_abi]}" -I"$root/src" -I"$root/include" -I"$pack/include")
for key in compiler_type stdlib build_abi; do
  v=${torch[pybind11_$key]-}
  [[ -z $v ]] || flags+=("-DPYBIND11_${key^^}=\"$v\"")
done
IFS=';' read -r -a incs <<<"${torch[include_dirs]}"
for d in "${incs[@]}" "$pyinc"; do flags+=(-isystem "$d"); done
lib=${torch[library_dir]}
start=$(date +%s)
if ! { printf '%s\n' "$root"/src/torch/*.cc |
         xargs -P "$(nproc)" -I{} sh -c '/usr/bin/g++ "$@" -c {} -o '"$mod"'/$(basename {} .cc).o' _ "${flags[@]}" &&
       /usr/bin/g++ -shared -o "$mod/mccl_torch$suffix" "$mod"/*.o \
         "$root/.devbench/build/src/api/libmccl.so.0.1.0" "$pack/libmccl_common.a" \
         -L"$lib" -ltorch -ltorch_cpu -lc10 -ltorch_python -Wl,-rpath,"$lib"; } >"$out/build.log" 2>&1; then
  tail -n 30 "$out/build.log"
  echo "torch build: FAILED"
  exit 2
fi
echo "torch build: $(($(date +%s) - start)) s, $mod/mccl_torch$suffix"

failed=0
for t in "${tests[@]}"; do
  script=test_$t.py args=()
  [[ $t == operations3 ]] && script=test_operations.py args=(3)
  start=$(date +%s)
  (cd "$root/tests/torch" && PYTHONPATH=$mod:$root/tests/torch PYTHONUNBUFFERED=1 \
    timeout -k 10 300 "$py" -W ignore::UserWarning -W ignore::FutureWarning "$script" "${args[@]}") \
    >"$out/$t.log" 2>&1
  rc=$?
  case $rc in
    0) verdict=passed ;;
    77) verdict=skipped ;;
    *) verdict="FAILED (rc $rc)"; failed=1; tail -n 20 "$out/$t.log" ;;
  esac
  echo "torch $t: $verdict, $(($(date +%s) - start)) s"
done
rm -rf "$mod"
exit $failed
