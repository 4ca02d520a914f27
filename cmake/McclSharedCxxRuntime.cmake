# libmccl, libmccl_mpi and the torch module are loaded into other people's
# processes (a Python interpreter with PyTorch, an MPI program), which bring
# their own C++ runtime. Each must use that one shared runtime
# (libstdc++.so.6, or libc++.so.1): a toolchain that links the runtime
# statically into a shared library (-static-libstdc++ in a flag, or inside a
# compiler wrapper) gives the library a private copy, with its own locale
# and stream globals, and the process then crashes in whichever copy meets
# the other's objects (beside PyTorch: the first communicator segfaulted in
# std::codecvt, reading a number from /sys).
#
# So configure builds a small shared library with the project's compiler and
# flags and reads its NEEDED entries: without the C++ runtime among them it
# stops, naming the compiler and the fix. Checked again whenever the
# compiler or those flags change.
include_guard(GLOBAL)

function(mccl_check_shared_cxx_runtime)
  string(TOUPPER "${CMAKE_BUILD_TYPE}" _config)
  set(_flags "${CMAKE_CXX_FLAGS} ${CMAKE_CXX_FLAGS_${_config}}")
  set(_link "${CMAKE_SHARED_LINKER_FLAGS} ${CMAKE_SHARED_LINKER_FLAGS_${_config}}")
  set(_key "${CMAKE_CXX_COMPILER}|${_flags}|${_link}")
  if(MCCL_SHARED_CXX_RUNTIME_CHECKED STREQUAL _key)
    return()
  endif()

  set(_tool "${CMAKE_READELF}")
  set(_args -d)
  if(NOT _tool)
    set(_tool "${CMAKE_OBJDUMP}")
    set(_args -p)
  endif()
  if(NOT _tool)
    message(STATUS "mccl: neither readelf nor objdump found: not checking that shared "
                   "libraries link the C++ runtime shared")
    return()
  endif()

  set(_dir ${CMAKE_BINARY_DIR}/CMakeFiles/mccl-cxx-runtime-probe)
  file(REMOVE_RECURSE ${_dir})
  try_compile(_built ${_dir} ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/cxx-runtime-probe
    mccl_cxx_runtime_probe
    CMAKE_FLAGS "-DCMAKE_CXX_COMPILER=${CMAKE_CXX_COMPILER}"
                "-DCMAKE_BUILD_TYPE=${CMAKE_BUILD_TYPE}"
                "-DCMAKE_CXX_FLAGS=${CMAKE_CXX_FLAGS}"
                "-DCMAKE_CXX_FLAGS_${_config}=${CMAKE_CXX_FLAGS_${_config}}"
                "-DCMAKE_SHARED_LINKER_FLAGS=${CMAKE_SHARED_LINKER_FLAGS}"
                "-DCMAKE_SHARED_LINKER_FLAGS_${_config}=${CMAKE_SHARED_LINKER_FLAGS_${_config}}"
    OUTPUT_VARIABLE _log)
  set(_probe ${_dir}/libmccl_cxx_runtime_probe.so)
  if(NOT _built OR NOT EXISTS ${_probe})
    message(FATAL_ERROR "mccl: ${CMAKE_CXX_COMPILER} cannot build a C++ shared library "
                        "with these flags:\n${_log}")
  endif()
  execute_process(COMMAND ${_tool} ${_args} ${_probe}
    OUTPUT_VARIABLE _dynamic RESULT_VARIABLE _rc ERROR_QUIET)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "mccl: ${_tool} ${_args} ${_probe} failed (${_rc})")
  endif()
  if(NOT _dynamic MATCHES "NEEDED[^\n]*lib(std)?c\\+\\+\\.so")
    # Name the flag when it is one of ours to see; else it is in the compiler.
    set(_where "the compiler itself (a wrapper?) adds it")
    foreach(_var IN ITEMS CMAKE_CXX_FLAGS CMAKE_CXX_FLAGS_${_config}
                          CMAKE_SHARED_LINKER_FLAGS CMAKE_SHARED_LINKER_FLAGS_${_config})
      if(${_var} MATCHES "-static(-libstdc\\+\\+)?( |$)")
        set(_where "${_var} has '${${_var}}'")
      endif()
    endforeach()
    message(FATAL_ERROR
      "mccl: ${CMAKE_CXX_COMPILER} (${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION}) "
      "links the C++ runtime statically into shared libraries (${_where}): a shared "
      "library it builds does not list libstdc++.so or libc++.so as NEEDED. libmccl, "
      "libmccl_mpi and the torch module would each carry a private copy of the C++ "
      "runtime and crash beside the one of the process that loads them (PyTorch, an MPI "
      "program). Configure with a compiler that links it shared, e.g. "
      "CXX=/usr/bin/g++ (or -DCMAKE_CXX_COMPILER=/usr/bin/g++) in a fresh build folder, "
      "or drop -static-libstdc++ from the flags.")
  endif()
  set(MCCL_SHARED_CXX_RUNTIME_CHECKED "${_key}" CACHE INTERNAL
    "compiler and flags whose shared libraries were seen to link the C++ runtime shared")
endfunction()

mccl_check_shared_cxx_runtime()
