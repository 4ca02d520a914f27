# The include probe (ctest -R layering.includes): every library target of
# src/ that belongs to a layer compiles with an include path that shows the
# layers the table (McclLayerTable.cmake) allows it and no other
# (McclLayers.cmake). For each such target, with the include path it
# really compiles with (its own root and those of what it links):
#  - one header of every layer is looked up with __has_include: found where
#    the table allows the layer, not found where it does not;
#  - a source that includes a header of a layer it may not use (the first
#    in the list) is compiled and must fail because the header is not found.
#
# Usage: cmake -DMCCL_ROOT=<repository> -DTARGETS=<build>/layer-includes/targets.cmake
#              -DCXX=<C++ compiler> -DWORK=<scratch folder> -P CheckLayerIncludes.cmake
cmake_minimum_required(VERSION 3.25)
foreach(_arg MCCL_ROOT TARGETS CXX WORK)
  if(NOT ${_arg})
    message(FATAL_ERROR "CheckLayerIncludes.cmake: pass -D${_arg}=...")
  endif()
endforeach()
include(${CMAKE_CURRENT_LIST_DIR}/McclLayerTable.cmake)
include(${TARGETS})
if(NOT MCCL_PROBE_TARGETS)
  message(FATAL_ERROR "${TARGETS} lists no layered target")
endif()

# One header of every layer, as a source would include it.
set(_layers mccl transport-api)
file(GLOB _headers RELATIVE "${MCCL_ROOT}/include" "${MCCL_ROOT}/include/mccl/*.h")
list(GET _headers 0 _header_mccl)
file(GLOB _headers RELATIVE "${MCCL_ROOT}/src" "${MCCL_ROOT}/src/transport/*.h")
list(GET _headers 0 _header_transport-api)
foreach(_t IN LISTS MCCL_TRANSPORTS)
  list(APPEND _layers transport/${_t})
  set(_header_transport/${_t} "transport/${_t}/${_t}_transport.h")
endforeach()
foreach(_p IN LISTS MCCL_OFFLOAD_PARTS)
  file(GLOB _headers RELATIVE "${MCCL_ROOT}/src" "${MCCL_ROOT}/src/offload/${_p}/*.h")
  list(APPEND _layers offload/${_p})
  list(GET _headers 0 _header_offload/${_p})
endforeach()
# Every other folder's headers (offload/x.h: offload-wire).
file(GLOB _dirs RELATIVE "${MCCL_ROOT}/src" "${MCCL_ROOT}/src/*")
foreach(_dir IN LISTS _dirs)
  file(GLOB _headers RELATIVE "${MCCL_ROOT}/src" "${MCCL_ROOT}/src/${_dir}/*.h")
  if(_dir STREQUAL "transport" OR NOT _headers)
    continue()
  endif()
  list(GET _headers 0 _header)
  mccl_layer_of("${_header}" _layer)
  list(APPEND _layers ${_layer})
  set(_header_${_layer} "${_header}")
endforeach()

file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
set(_failures "")
set(_compiles 0)
foreach(_target IN LISTS MCCL_PROBE_TARGETS)
  set(_layer "${MCCL_PROBE_${_target}_LAYER}")
  mccl_layer_allowed("${_layer}" _allowed _error)
  set(_flags "")
  foreach(_dir IN LISTS MCCL_PROBE_${_target}_INCLUDES)
    list(APPEND _flags "-I${_dir}")
  endforeach()
  # What the target sees, all layers in one preprocessor run.
  set(_probe "")
  set(_forbidden "")
  foreach(_to IN LISTS _layers)
    set(_h "${_header_${_to}}")
    if(_to STREQUAL _layer OR _to IN_LIST _allowed)
      string(APPEND _probe "#if !__has_include(\"${_h}\")\n"
        "#error \"${_target} (${_layer}) cannot see ${_h}, which the layer table allows\"\n#endif\n")
    else()
      list(APPEND _forbidden ${_to})
      string(APPEND _probe "#if __has_include(\"${_h}\")\n"
        "#error \"${_target} (${_layer}) sees ${_h}: ${_layer} may not depend on ${_to}\"\n#endif\n")
    endif()
  endforeach()
  file(WRITE "${WORK}/${_target}_sees.cc" "${_probe}")
  execute_process(COMMAND ${CXX} -std=c++20 -E ${_flags} "${WORK}/${_target}_sees.cc"
    RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_VARIABLE _err)
  math(EXPR _compiles "${_compiles} + 1")
  if(NOT _rc EQUAL 0)
    list(APPEND _failures "${_err}")
  endif()
  # A wrong include does not compile (one is enough: __has_include above
  # asked the same search for every layer).
  if(_forbidden)
    list(GET _forbidden 0 _to)
    string(REPLACE "/" "_" _name "${_target}_includes_${_to}")
    file(WRITE "${WORK}/${_name}.cc" "#include \"${_header_${_to}}\"\nint main() { return 0; }\n")
    execute_process(COMMAND ${CXX} -std=c++20 -fsyntax-only ${_flags} "${WORK}/${_name}.cc"
      RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_VARIABLE _err)
    math(EXPR _compiles "${_compiles} + 1")
    if(_rc EQUAL 0)
      list(APPEND _failures "${_target} (${_layer}): #include \"${_header_${_to}}\" compiles")
    elseif(NOT _err MATCHES "No such file or directory|file not found")
      list(APPEND _failures "${_target} (${_layer}): #include \"${_header_${_to}}\" fails, "
        "but not because the header is hidden:\n${_err}")
    endif()
  endif()
endforeach()

list(LENGTH _failures _n)
if(_n GREATER 0)
  list(JOIN _failures "\n  " _text)
  message(FATAL_ERROR "include roots against the layer table:\n  ${_text}")
endif()
file(REMOVE_RECURSE "${WORK}")
list(LENGTH MCCL_PROBE_TARGETS _targets)
message(STATUS "layering.includes: ${_targets} targets see exactly the layers the table allows "
               "(${_compiles} compiler runs)")
