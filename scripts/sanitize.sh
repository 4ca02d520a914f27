#!/usr/bin/env bash
# The sanitizer and fuzz stages of the CI run (scripts/test.sh runs them
# after the main suite when given no arguments). Each stage has its own
# build tree and builds only the targets it runs:
#   asan  build-asan (clang, AddressSanitizer + UndefinedBehaviorSanitizer +
#         LeakSanitizer, libFuzzer coverage): the unit and in-process suites,
#         the short soak (label soak)
#   fuzz  build-asan: a short run of every fuzz target from its seed corpus
#         (label fuzz; MCCL_FUZZ_SECONDS each, default 10)
#   tsan  build-tsan (ThreadSanitizer): the progress-engine and offload tests
# Usage: scripts/sanitize.sh [asan] [fuzz] [tsan]   (none: all three)
# Extra configure arguments for both trees: MCCL_SANITIZE_CMAKE_ARGS.
set -euo pipefail
cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."

stages=("$@")
[[ ${#stages[@]} -gt 0 ]] || stages=(asan fuzz tsan)
extra=(${MCCL_SANITIZE_CMAKE_ARGS:-})

# The unit and in-process suites (what fits the CI's time: the UDP, UCX
# and verbs variants run in the main suite only), the soak and the fuzzers.
asan_targets=(common_test codec_test sim_fabric_test c_api_test c_api_reduce_test protocol_test
  reduce_kernels_test tcp_reliable_test tcp_queue_test protocol_landing_test tcp_bootstrap_test
  bootstrap_admission_test
  setup_agree_test placement_test linger_test udp_transport_test udp_gso_test udp_landing_test
  udp_source_test udp_auth_test offload_regions_test offload_staging_test
  offload_staged_blocks_test offload_wire_test offload_security_test inproc_smoke_test
  inproc_concurrency_test inproc_errors_test inproc_eager_test inproc_algorithms_test
  inproc_reduce_concurrency_test inproc_reduce_errors_test inproc_api_robustness_test
  inproc_shared_progress_test inproc_landing_test helpers_test mccl_soak mccl_offloadd
  mccl_fuzzers)
# The engines' threads: the host progress thread (own and shared), eager
# completion and lingering, and the offload daemon (its self tests).
tsan_targets=(inproc_shared_progress_test inproc_concurrency_test inproc_eager_test
  helpers_test inproc_landing_test offload_regions_test offload_test offload_worker mccl_offloadd)
# ctest lists the test cases of built executables only (the others appear
# as unlabelled *_NOT_BUILT entries), so labels select what was built; the
# plain add_test entries of other targets are excluded by name, and so is
# layering.no_throw, which reads every layered library (a property of the
# code, checked by the main build, where all of them are built).
not_built='^(install\.|tools\.|layering\.no_throw$|mp_reduce\.|mp_c_api\.|mp_mccl_run\.|mp_elastic_soak\.|offload\.cross|mpi\.)'
# offload_test's multi-process cases (sweeps, zero copy, failures) run past
# their launchers' time limits at TSan's speed: only its daemon cases run.
tsan_skip='|^(Loopback/OffloadSweep|OffloadZeroCopy|OffloadErrors|OffloadFailure)\.'

# Line tables, not full debug information: a report still names the file
# and line of every frame, and a file compiles about 10% faster (an ASan
# compile 18.6-19.4 -> 16.6-17.3 s, 2026-11-28); the build is most of a stage.
lines_only() {  # FLAG: -gline-tables-only (clang) or -g1 (GCC); sets line_flags
  line_flags=("-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 $1 -DNDEBUG"
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 $1 -DNDEBUG")
}

configure_asan() {
  lines_only -gline-tables-only
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${line_flags[@]}" \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DMCCL_SANITIZE=address,undefined -DMCCL_FUZZ=ON -DMCCL_BUILD_BENCH=OFF -DMCCL_WERROR=ON "${extra[@]}" >/dev/null
  # The vector GHASH's test exists where authentication is built.
  if grep -q '^MCCL_HAVE_AUTH:INTERNAL=ON' build-asan/CMakeCache.txt; then
    asan_targets+=(protocol_gmac_test)
  fi
  cmake --build build-asan --target "${asan_targets[@]}"
}

# Sanitizer reports fail the test that produced them.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}

for stage in "${stages[@]}"; do
  start=$SECONDS
  case $stage in
    asan)
      configure_asan
      # hwloc's PCI plugin (libpciaccess) leaks 1 KiB per process, from a
      # module it has unloaded by exit so no suppression can name it; the
      # sanitizer runs place progress threads without PCI locality.
      HWLOC_COMPONENTS=-pci ctest --test-dir build-asan --output-on-failure -j2 \
        -L '^(unit|inproc|soak)$' -E "$not_built"
      ;;
    fuzz)
      [[ -f build-asan/build.ninja ]] || configure_asan
      cmake --build build-asan --target mccl_fuzzers
      ctest --test-dir build-asan --output-on-failure -j2 -L '^fuzz$'
      ;;
    tsan)
      lines_only -g1
      cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${line_flags[@]}" \
        -DMCCL_SANITIZE=thread -DMCCL_WERROR=ON \
        -DMCCL_BUILD_BENCH=OFF "${extra[@]}" >/dev/null
      cmake --build build-tsan --target "${tsan_targets[@]}"
      # UCX's libucm hooks madvise() with a lock that TSan's interceptors
      # cannot take in a thread being started (SIGSEGV in start_thread).
      UCX_MEM_MMAP_HOOK_MODE=none ctest --test-dir build-tsan --output-on-failure -j2 \
        -L '^(unit|inproc|mp)$' -E "$not_built$tsan_skip"
      ;;
    *)
      echo "sanitize.sh: unknown stage '$stage' (asan, fuzz, tsan)" >&2
      exit 2
      ;;
  esac
  echo "sanitize.sh: stage $stage took $((SECONDS - start)) s"
done
