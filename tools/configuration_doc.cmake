# cmake -DMODE=check|update -DMCCL_INFO=<mccl_info> -DDOC=<docs/configuration.md> -P this
# check: fails when DOC differs from `mccl_info --markdown`; update: rewrites DOC.
foreach(_v MODE MCCL_INFO DOC)
  if(NOT DEFINED ${_v})
    message(FATAL_ERROR "configuration_doc.cmake: -D${_v}=... is required")
  endif()
endforeach()

# --markdown prints only what the registry declares (no effective values), so
# the result does not depend on the caller's MCCL_* environment.
execute_process(COMMAND ${MCCL_INFO} --markdown
  OUTPUT_VARIABLE _generated RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "${MCCL_INFO} --markdown failed: ${_rc}")
endif()

if(MODE STREQUAL "update")
  file(WRITE ${DOC} "${_generated}")
  message(STATUS "wrote ${DOC}")
elseif(MODE STREQUAL "check")
  set(_current "")
  if(EXISTS ${DOC})
    file(READ ${DOC} _current)
  endif()
  if(NOT _current STREQUAL _generated)
    message(FATAL_ERROR
      "${DOC} is not the output of `mccl_info --markdown`: a setting was added or "
      "changed in src/common/settings.cc. Regenerate the doc with\n"
      "  cmake --build build --target mccl_update_docs\n"
      "and commit it.")
  endif()
else()
  message(FATAL_ERROR "configuration_doc.cmake: MODE must be check or update, not '${MODE}'")
endif()
