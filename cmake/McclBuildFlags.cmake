# Compile settings shared by every MCCL target, as an interface target so
# no global flag is set. Link it PRIVATE from each target.
add_library(mccl_build_flags INTERFACE)
target_compile_options(mccl_build_flags INTERFACE
  # -Wnon-virtual-dtor is C++ only: the C API's tests and examples are C.
  -Wall -Wextra -Wpedantic -Wshadow $<$<COMPILE_LANGUAGE:CXX>:-Wnon-virtual-dtor>
  -Wno-missing-field-initializers)
if(MCCL_WERROR)
  target_compile_options(mccl_build_flags INTERFACE -Werror)
endif()
# GCC 12's -O3 (Release) reports -Wrestrict on `"literal" + std::string` (its
# bug 105651) and -Warray-bounds and -Wstringop-overread on std::vector::insert
# at the end of a vector (a memmove "from a region of size 0"): false
# positives inside libstdc++ that would otherwise fail a Release build under
# MCCL_WERROR.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  target_compile_options(mccl_build_flags INTERFACE
    -Wno-restrict $<$<CONFIG:Release>:-Wno-array-bounds>
    $<$<CONFIG:Release>:-Wno-stringop-overread>)
endif()
# MCCL_SANITIZE: one sanitizer or a comma-separated list that the compiler
# can combine (address,undefined). Undefined behaviour aborts instead of
# printing and going on, so a test that hits it fails.
if(MCCL_SANITIZE)
  string(REPLACE "," ";" _mccl_sanitizers "${MCCL_SANITIZE}")
  foreach(_s IN LISTS _mccl_sanitizers)
    if(NOT _s MATCHES "^(address|undefined|thread)$")
      message(FATAL_ERROR "MCCL_SANITIZE takes address, undefined, thread or a comma-separated "
                          "list of them (address,undefined), not '${MCCL_SANITIZE}'")
    endif()
  endforeach()
  target_compile_options(mccl_build_flags INTERFACE -fsanitize=${MCCL_SANITIZE}
    -fno-omit-frame-pointer)
  target_link_options(mccl_build_flags INTERFACE -fsanitize=${MCCL_SANITIZE})
  # Instrumented loops cannot always be vectorized as -ftree-vectorize
  # (src/coll) asks; clang says so with a warning that -Werror would fail.
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    target_compile_options(mccl_build_flags INTERFACE -Wno-pass-failed)
  endif()
  if("undefined" IN_LIST _mccl_sanitizers)
    target_compile_options(mccl_build_flags INTERFACE -fno-sanitize-recover=undefined)
  endif()
endif()
# MCCL_FUZZ: every library gets libFuzzer's coverage instrumentation, so the
# fuzz targets (tests/fuzz) see the code they reach; only clang has it.
if(MCCL_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "MCCL_FUZZ=ON needs clang (-DCMAKE_CXX_COMPILER=clang++ "
                        "-DCMAKE_C_COMPILER=clang), not ${CMAKE_CXX_COMPILER_ID}")
  endif()
  target_compile_options(mccl_build_flags INTERFACE -fsanitize=fuzzer-no-link)
endif()
