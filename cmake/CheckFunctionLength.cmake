# The function-length check (ctest -R style.function_length): no function
# of src/ is longer than MAX lines (80), from its first line to its closing
# brace, as Universal Ctags sees them (kind f: definitions; a header's
# inline functions count too). A longer one fails the check, named with its
# file, line and length: split it into steps that say what they do.
#
# Usage: cmake -DCTAGS=<universal-ctags> -DSRC=<repo>/src [-DMAX=80] -P this
cmake_minimum_required(VERSION 3.25)

if(NOT MAX)
  set(MAX 80)
endif()
execute_process(COMMAND "${CTAGS}" --version OUTPUT_VARIABLE _version RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0 OR NOT _version MATCHES "Universal Ctags")
  message(FATAL_ERROR "${CTAGS} is not Universal Ctags (Debian: universal-ctags; scripts/setup.sh)")
endif()
execute_process(
  COMMAND "${CTAGS}" -R --languages=C++ --map-C++=+.h --kinds-C++=f --fields=+ne -o - "${SRC}"
  OUTPUT_VARIABLE _tags RESULT_VARIABLE _rc ERROR_VARIABLE _err)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "${CTAGS} failed on ${SRC}: ${_err}")
endif()

set(_failed "")
set(_functions 0)
# The patterns hold ';' and brackets, which a CMake list would split on or
# group by: neither matters to the fields read here.
string(REGEX REPLACE "[][;]" "," _tags "${_tags}")
string(REPLACE "\n" ";" _lines "${_tags}")
foreach(_tag IN LISTS _lines)
  # name TAB file TAB pattern TAB kind TAB line:N ... TAB end:M
  if(NOT _tag MATCHES "^([^\t]+)\t([^\t]+)\t.*\tline:([0-9]+).*\tend:([0-9]+)")
    continue()
  endif()
  math(EXPR _functions "${_functions} + 1")
  math(EXPR _length "${CMAKE_MATCH_4} - ${CMAKE_MATCH_3} + 1")
  if(_length GREATER MAX)
    file(RELATIVE_PATH _file "${SRC}" "${CMAKE_MATCH_2}")
    string(APPEND _failed "  src/${_file}:${CMAKE_MATCH_3}: ${CMAKE_MATCH_1}, ${_length} lines\n")
  endif()
endforeach()

if(_functions EQUAL 0)
  message(FATAL_ERROR "${CTAGS} found no function under ${SRC}")
endif()
if(_failed)
  message(FATAL_ERROR "functions of src/ over ${MAX} lines (split them):\n${_failed}")
endif()
message(STATUS "${_functions} functions of src/, none over ${MAX} lines")
