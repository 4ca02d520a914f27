# The configure-time refusal of cmake/McclSharedCxxRuntime.cmake, seen as a
# user sees it: this project configured in a scratch folder with a
# toolchain that links libstdc++ statically into shared libraries must stop,
# naming the compiler and the fix, before building anything. Two such
# toolchains: the flag in CMAKE_SHARED_LINKER_FLAGS, and a compiler wrapper
# that adds it (what a user's CXX may be).
#   cmake -DROOT=<source> -DWORK=<scratch> -DGENERATOR=<gen> -DCC=<c> -DCXX=<c++>
#         -P shared_cxx_runtime_test.cmake
foreach(_var IN ITEMS ROOT WORK GENERATOR CC CXX)
  if(NOT DEFINED ${_var})
    message(FATAL_ERROR "shared_cxx_runtime_test: -D${_var}=... is required")
  endif()
endforeach()
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})

# configure_must_refuse(NAME name COMPILER cxx EXPECT regex... ARGS arg...)
function(configure_must_refuse)
  cmake_parse_arguments(C "" "NAME;COMPILER" "EXPECT;ARGS" ${ARGN})
  execute_process(
    COMMAND ${CMAKE_COMMAND} -S ${ROOT} -B ${WORK}/${C_NAME} -G ${GENERATOR}
            -DCMAKE_C_COMPILER=${CC} -DCMAKE_CXX_COMPILER=${C_COMPILER} ${C_ARGS}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  # CMake wraps long messages: compare with single spaces.
  string(REGEX REPLACE "[ \n]+" " " text "${out}${err}")
  if(rc EQUAL 0)
    message(FATAL_ERROR "${C_NAME}: configure succeeded; it must refuse:\n${out}${err}")
  endif()
  foreach(_want IN LISTS C_EXPECT)
    if(NOT text MATCHES "${_want}")
      message(FATAL_ERROR "${C_NAME}: the refusal does not say '${_want}':\n${out}${err}")
    endif()
  endforeach()
  message(STATUS "${C_NAME}: refused as expected")
endfunction()

string(REGEX REPLACE "([][+.*()^$?|\\\\])" "\\\\\\1" cxx_re "${CXX}")
configure_must_refuse(NAME flag COMPILER ${CXX} ARGS -DCMAKE_SHARED_LINKER_FLAGS=-static-libstdc++
  EXPECT "mccl: ${cxx_re} \\(" "links the C\\+\\+ runtime statically"
         "CMAKE_SHARED_LINKER_FLAGS has '-static-libstdc\\+\\+'" "CXX=/usr/bin/g\\+\\+"
         "drop -static-libstdc\\+\\+")

set(wrapper ${WORK}/static-cxx)
file(WRITE ${wrapper} "#!/bin/sh\nexec '${CXX}' \"$@\" -static-libstdc++\n")
file(CHMOD ${wrapper} PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)
configure_must_refuse(NAME wrapper COMPILER ${wrapper}
  EXPECT "mccl: ${WORK}/static-cxx \\(" "the compiler itself \\(a wrapper\\?\\) adds it"
         "CXX=/usr/bin/g\\+\\+")
file(REMOVE_RECURSE ${WORK})
