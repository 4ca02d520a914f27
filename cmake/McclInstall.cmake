# Installation and the find_package(mccl) package.
#
# Installs the shared library `mccl` (exported as mccl::mccl), the public
# headers of include/mccl/ and the mccl_info tool, plus mcclConfig.cmake and
# mcclConfigVersion.cmake so that after `cmake --install` a consumer writes
#   find_package(mccl REQUIRED)
#   target_link_libraries(app PRIVATE mccl::mccl)
# Internal static layers (mccl_common, ...) are linked PRIVATE into the shared
# library, so they are neither installed nor exported; only include/mccl is API.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# The tree must configure before the library target exists (it is written in
# parallel with the rest); without it there is nothing to package yet.
if(NOT TARGET mccl)
  message(STATUS "mccl: library target not defined yet; install rules skipped")
  return()
endif()

set(MCCL_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/mccl")

# A versioned soname lets distributions ship several ABI generations.
get_target_property(_mccl_soversion mccl SOVERSION)
if(NOT _mccl_soversion)
  set_target_properties(mccl PROPERTIES
    VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR})
endif()

install(TARGETS mccl EXPORT mcclTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/mccl
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h" PATTERN "*.hpp")
install(FILES ${PROJECT_BINARY_DIR}/include/mccl/version_number.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/mccl)

if(TARGET mccl_info)
  install(TARGETS mccl_info RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

install(EXPORT mcclTargets
  NAMESPACE mccl::
  FILE mcclTargets.cmake
  DESTINATION ${MCCL_INSTALL_CMAKEDIR})

configure_package_config_file(
  ${CMAKE_CURRENT_LIST_DIR}/mcclConfig.cmake.in
  ${PROJECT_BINARY_DIR}/mcclConfig.cmake
  INSTALL_DESTINATION ${MCCL_INSTALL_CMAKEDIR})
# A consumer asking for X.Y accepts any X.Z with Z >= Y: the API may grow
# within a major version but not break. Before 1.0 every minor version may
# break it, so 0.x accepts only 0.x.z.
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(_mccl_compatibility SameMinorVersion)
else()
  set(_mccl_compatibility SameMajorVersion)
endif()
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/mcclConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY ${_mccl_compatibility})
install(FILES
  ${PROJECT_BINARY_DIR}/mcclConfig.cmake
  ${PROJECT_BINARY_DIR}/mcclConfigVersion.cmake
  DESTINATION ${MCCL_INSTALL_CMAKEDIR})
