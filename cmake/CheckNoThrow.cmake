# The throw check (ctest -R layering.no_throw): no library below api/
# throws (src/common/status.h: failures travel as Status values, and only
# the public edge, api/ and the mpi and torch front ends, turns them into
# exceptions). Every layered target of src/ is one of those libraries; one
# whose objects call __cxa_throw, the runtime entry of a throw expression,
# fails the check, named with the objects. Throws inside the standard
# library (std::bad_alloc, std::vector::at) go through libstdc++'s own
# functions and are not counted: they are what api/boundary.h catches.
#
# Usage: cmake -DTARGETS=<build>/layer-includes/targets.cmake -DNM=<nm> -P this
cmake_minimum_required(VERSION 3.25)

include("${TARGETS}")
if(NOT MCCL_PROBE_TARGETS)
  message(FATAL_ERROR "${TARGETS} lists no layered target")
endif()

set(_failed "")
foreach(_target IN LISTS MCCL_PROBE_TARGETS)
  set(_file "${MCCL_PROBE_${_target}_FILE}")
  if(NOT EXISTS "${_file}")
    message(FATAL_ERROR "${_target} (layer ${MCCL_PROBE_${_target}_LAYER}): ${_file} is not built")
  endif()
  execute_process(COMMAND "${NM}" -A "${_file}" OUTPUT_VARIABLE _symbols RESULT_VARIABLE _rc
                  ERROR_VARIABLE _err)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "${NM} -A ${_file} failed: ${_err}")
  endif()
  string(REGEX MATCHALL "[^\n]*:[^\n:]* U __cxa_throw\n" _throwing "${_symbols}")
  if(_throwing)
    string(REGEX REPLACE ":? +U __cxa_throw\n" ";" _where "${_throwing}")
    list(REMOVE_DUPLICATES _where)
    list(JOIN _where " " _where)
    string(APPEND _failed "  ${_target} (layer ${MCCL_PROBE_${_target}_LAYER}): ${_where}\n")
  endif()
endforeach()

if(_failed)
  message(FATAL_ERROR "these libraries below api/ throw (return a Status instead):\n${_failed}")
endif()
list(LENGTH MCCL_PROBE_TARGETS _count)
message(STATUS "no throw in any of ${_count} layered libraries below api/")
