# Compile settings shared by every MCCL target, as an interface target so
# no global flag is set. Link it PRIVATE from each target.
add_library(mccl_build_flags INTERFACE)
target_compile_options(mccl_build_flags INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wno-missing-field-initializers)
if(MCCL_WERROR)
  target_compile_options(mccl_build_flags INTERFACE -Werror)
endif()
if(MCCL_SANITIZE)
  if(NOT MCCL_SANITIZE MATCHES "^(address|undefined|thread)$")
    message(FATAL_ERROR "MCCL_SANITIZE must be address, undefined or thread, not '${MCCL_SANITIZE}'")
  endif()
  target_compile_options(mccl_build_flags INTERFACE -fsanitize=${MCCL_SANITIZE} -fno-omit-frame-pointer)
  target_link_options(mccl_build_flags INTERFACE -fsanitize=${MCCL_SANITIZE})
endif()
