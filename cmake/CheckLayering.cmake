# The layering of src/, checked on every #include (ctest -R layering):
#
#   coll -> protocol -> transport -> common      (bootstrap, progress and topo
#                                                  from the side)
#   setup (the one creation path)                over protocol and every transport
#   api, mpi, offload, torch                     above everything
#
# Layers above transport see only its interfaces (transport/<file>.h), never
# an implementation folder; a transport folder sees its own files, the
# interfaces and common, never a sibling transport. The public headers
# (include/mccl) and the transports' <name>_transport.h include no
# third-party header.
#
# Usage: cmake -DMCCL_ROOT=<repository> -P CheckLayering.cmake
# Fails (a message per include against the layering) or prints a summary.
cmake_minimum_required(VERSION 3.25)
if(NOT MCCL_ROOT)
  message(FATAL_ERROR "CheckLayering.cmake: pass -DMCCL_ROOT=<repository root>")
endif()

# What each layer of src/ may include besides itself ("mccl" is the public
# API under include/, which every layer may use). "transport-api" means the
# interface headers directly under src/transport/. The in-process world
# (threads as ranks) is a bootstrap that runs on the sim fabric, hence
# bootstrap -> transport/sim.
set(_allow_common "common;mccl")
set(_allow_topo "topo;common;mccl")
set(_allow_bootstrap "bootstrap;transport-api;transport/sim;common;mccl")
set(_allow_transport "transport-api;common;mccl")
set(_allow_protocol "protocol;transport-api;common;mccl")
set(_allow_coll "coll;protocol;transport-api;common;mccl")
set(_allow_progress "progress;protocol;transport-api;topo;common;mccl")
# Communicator creation picks and configures the transports themselves.
set(_allow_setup "setup;protocol;transport-api;transport/sim;transport/udp;transport/tcp;transport/ucx;transport/ibud;common;mccl")
set(_above_everything "api;mpi;offload;torch")
set(_transports "sim;udp;tcp;ucx;ibud")

# Headers of libraries MCCL builds on: never in a public header, nor in a
# transport's <name>_transport.h.
set(_third_party_re
    "^(infiniband|rdma|ucp|ucs|uct|pmix|hwloc|sodium|mpi|gtest|gmock|benchmark)[/.]|^(mpi|pmix|hwloc|sodium)\\.h$")

set(_violations "")
set(_checked 0)

# Which "layer" an include path names: transport-api for src/transport/x.h,
# transport/<name> for a transport folder, else its first folder.
function(_layer_of path out)
  if(path MATCHES "^transport/[^/]+$")
    set(${out} "transport-api" PARENT_SCOPE)
  elseif(path MATCHES "^(transport/[^/]+)/")
    set(${out} "${CMAKE_MATCH_1}" PARENT_SCOPE)
  elseif(path MATCHES "^([^/]+)/")
    set(${out} "${CMAKE_MATCH_1}" PARENT_SCOPE)
  else()
    set(${out} "" PARENT_SCOPE)
  endif()
endfunction()

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
  _layer_of("${_rel}" _from)
  if(_rel MATCHES "^([^/]+)/")
    set(_top "${CMAKE_MATCH_1}")
  endif()
  if(_top IN_LIST _above_everything)
    continue()
  endif()
  if(_from MATCHES "^transport/(.+)$")
    if(NOT CMAKE_MATCH_1 IN_LIST _transports)
      list(APPEND _violations "src/${_rel}: transport folder '${CMAKE_MATCH_1}' is not in the layer table")
      continue()
    endif()
    set(_allowed "${_from};${_allow_transport}")
  elseif(_from STREQUAL "transport-api")
    set(_allowed "${_allow_transport}")
  elseif(DEFINED _allow_${_from})
    set(_allowed "${_allow_${_from}}")
  else()
    list(APPEND _violations "src/${_rel}: layer '${_from}' is not in the layer table of ${CMAKE_CURRENT_LIST_FILE}")
    continue()
  endif()
  _includes("${MCCL_ROOT}/src/${_rel}" _quoted _angled)
  foreach(_inc IN LISTS _quoted)
    math(EXPR _checked "${_checked} + 1")
    _layer_of("${_inc}" _to)
    if(_to STREQUAL "")
      list(APPEND _violations "src/${_rel}: #include \"${_inc}\" names no layer (write <layer>/<file>)")
    elseif(NOT _to IN_LIST _allowed)
      list(JOIN _allowed ", " _allowed_text)
      list(APPEND _violations "src/${_rel}: #include \"${_inc}\": ${_from} may not depend on ${_to} (allowed: ${_allowed_text})")
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
foreach(_t IN LISTS _transports)
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
