# The layering of src/, checked on every #include (ctest -R layering) against
# the layer table (McclLayerTable.cmake). The library targets compile with
# per-layer include roots from the same table (McclLayers.cmake), so a wrong
# include already fails to compile in a target; this check also covers what
# the compiler cannot see: headers no target of this build compiles, includes
# that climb out with "../" or name no layer, single files of an allowed
# layer that the table denies (the settings registry below the top), the
# transports' skeleton, and third-party headers in the public headers
# (include/mccl) and in a transport's <name>_transport.h.
#
# Usage: cmake -DMCCL_ROOT=<repository> -P CheckLayering.cmake
# Fails (a message per include against the layering) or prints a summary.
cmake_minimum_required(VERSION 3.25)
if(NOT MCCL_ROOT)
  message(FATAL_ERROR "CheckLayering.cmake: pass -DMCCL_ROOT=<repository root>")
endif()

include(${CMAKE_CURRENT_LIST_DIR}/McclLayerTable.cmake)

# Headers of libraries MCCL builds on: never in a public header, nor in a
# transport's <name>_transport.h.
set(_third_party_re
    "^(infiniband|rdma|ucp|ucs|uct|pmix|hwloc|sodium|mpi|gtest|gmock|benchmark)[/.]|^(mpi|pmix|hwloc|sodium)\\.h$")

set(_violations "")
set(_checked 0)

function(_includes file quoted angled)
  file(STRINGS "${file}" _lines REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]")
  set(_q "")
  set(_a "")
  foreach(_l IN LISTS _lines)
    if(_l MATCHES "#[ \t]*include[ \t]*\"([^\"]+)\"")
      list(APPEND _q "${CMAKE_MATCH_1}")
    elseif(_l MATCHES "#[ \t]*include[ \t]*<([^>]+)>")
      list(APPEND _a "${CMAKE_MATCH_1}")
    endif()
  endforeach()
  set(${quoted} "${_q}" PARENT_SCOPE)
  set(${angled} "${_a}" PARENT_SCOPE)
endfunction()

file(GLOB_RECURSE _sources RELATIVE "${MCCL_ROOT}/src" "${MCCL_ROOT}/src/*.h" "${MCCL_ROOT}/src/*.cc")
list(SORT _sources)
foreach(_rel IN LISTS _sources)
  mccl_layer_of("${_rel}" _from)
  mccl_layer_allowed("${_from}" _allowed _error)
  if(_error)
    list(APPEND _violations "src/${_rel}: ${_error}")
    continue()
  elseif(_allowed STREQUAL "*")
    continue()
  endif()
  mccl_layer_denied("${_from}" _denied)
  _includes("${MCCL_ROOT}/src/${_rel}" _quoted _angled)
  foreach(_inc IN LISTS _quoted)
    math(EXPR _checked "${_checked} + 1")
    mccl_layer_of("${_inc}" _to)
    if(_to STREQUAL "")
      list(APPEND _violations "src/${_rel}: #include \"${_inc}\" names no layer (write <layer>/<file>)")
    elseif(NOT _to IN_LIST _allowed)
      list(JOIN _allowed ", " _allowed_text)
      list(APPEND _violations "src/${_rel}: #include \"${_inc}\": ${_from} may not depend on ${_to} (allowed: ${_allowed_text})")
    elseif(_inc IN_LIST _denied)
      list(APPEND _violations "src/${_rel}: #include \"${_inc}\": ${_from} may not include this file (MCCL_LAYER_DENY_* in cmake/McclLayerTable.cmake says why)")
    endif()
  endforeach()
  if(_rel MATCHES "^transport/([^/]+)/([^/]+)_transport\\.h$" AND CMAKE_MATCH_1 STREQUAL CMAKE_MATCH_2)
    foreach(_inc IN LISTS _angled)
      if(_inc MATCHES "${_third_party_re}")
        list(APPEND _violations "src/${_rel}: #include <${_inc}>: a transport's <name>_transport.h carries no third-party header")
      endif()
    endforeach()
  endif()
endforeach()

# Every transport folder has the same skeleton.
foreach(_t IN LISTS MCCL_TRANSPORTS)
  foreach(_f "${_t}_transport.h" "${_t}_transport.cc" "CMakeLists.txt")
    if(NOT EXISTS "${MCCL_ROOT}/src/transport/${_t}/${_f}")
      list(APPEND _violations "src/transport/${_t}: no ${_f} (every transport has <name>_transport.{h,cc} and a CMakeLists.txt)")
    endif()
  endforeach()
endforeach()

# The public API: only its own headers and no third-party one.
file(GLOB_RECURSE _public RELATIVE "${MCCL_ROOT}" "${MCCL_ROOT}/include/*.h" "${MCCL_ROOT}/include/*.hpp")
foreach(_rel IN LISTS _public)
  _includes("${MCCL_ROOT}/${_rel}" _quoted _angled)
  foreach(_inc IN LISTS _quoted)
    math(EXPR _checked "${_checked} + 1")
    if(NOT _inc MATCHES "^mccl/")
      list(APPEND _violations "${_rel}: #include \"${_inc}\": a public header includes only mccl/ headers")
    endif()
  endforeach()
  foreach(_inc IN LISTS _angled)
    if(_inc MATCHES "${_third_party_re}")
      list(APPEND _violations "${_rel}: #include <${_inc}>: no third-party header in the public API")
    endif()
  endforeach()
endforeach()

list(LENGTH _violations _n)
if(_n GREATER 0)
  list(JOIN _violations "\n  " _text)
  message(FATAL_ERROR "${_n} include(s) against the layering:\n  ${_text}")
endif()
list(LENGTH _sources _files)
message(STATUS "layering: ${_checked} includes in ${_files} source files and the public headers follow the layer table")
