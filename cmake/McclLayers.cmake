# Per-layer include roots: a target of src/ sees only its own layer and the
# layers the table (McclLayerTable.cmake) allows it, so an include against
# the layering fails to compile in that target instead of waiting for the
# layering test.
#
# Sources write includes as "<layer>/<file>.h", relative to src/. Giving
# src/ itself as the include path would show every layer to every target, so
# each layer gets a root of its own in the build tree,
#   <build>/layer-includes/<layer>/
# holding symbolic links to the allowed folders of src/ only (for the
# transport interfaces and the offload wire, to the headers directly under
# src/transport/ and src/offload/, not to the folders below them). The
# links point into the source tree: headers are edited in place, and a new
# file in a layer is seen at once.
# A layer above everything (api, mpi, torch) gets src/ itself.
#
# A static library's root is PUBLIC (whoever links it compiles its
# headers, which include the layers it may use); a shared library's,
# module's or executable's is PRIVATE. Libraries link their lower layers
# PUBLIC, so a target also sees the roots of what it links: each of those
# is a subset of its own allowed set, as the table is closed under the
# layers' links (the layering test's include probe would say otherwise).
#
# mccl_apply_layer_include_roots(<dir>...) gives every target defined in
# those folders (and below) the root of the layer it lives in, and writes
# <build>/layer-includes/targets.cmake, which the include probe
# (CheckLayerIncludes.cmake, CTest layering.includes) and the throw check
# (CheckNoThrow.cmake, CTest layering.no_throw) read.
include_guard(GLOBAL)
include(${CMAKE_CURRENT_LIST_DIR}/McclLayerTable.cmake)

get_filename_component(MCCL_LAYER_SOURCE_ROOT "${CMAKE_CURRENT_LIST_DIR}/../src" ABSOLUTE)
get_filename_component(MCCL_PUBLIC_INCLUDE_DIR "${CMAKE_CURRENT_LIST_DIR}/../include" ABSOLUTE)
set(MCCL_LAYER_INCLUDE_ROOTS "${CMAKE_BINARY_DIR}/layer-includes")

# _mccl_stage_layer_root(<layer> <out>): (re)builds the root of <layer> and
# returns its path.
function(_mccl_stage_layer_root layer out)
  string(REPLACE "/" "_" _name "${layer}")
  set(_root "${MCCL_LAYER_INCLUDE_ROOTS}/${_name}")
  set(${out} "${_root}" PARENT_SCOPE)
  get_property(_done GLOBAL PROPERTY _MCCL_LAYER_ROOT_STAGED_${_name})
  if(_done)
    return()
  endif()
  set_property(GLOBAL PROPERTY _MCCL_LAYER_ROOT_STAGED_${_name} TRUE)
  # Removes links, never what they point to.
  file(REMOVE_RECURSE "${_root}")
  file(MAKE_DIRECTORY "${_root}")
  mccl_layer_allowed("${layer}" _allowed _error)
  foreach(_entry IN LISTS _allowed)
    if(_entry STREQUAL "mccl")
      continue()  # include/, added as a directory of its own
    endif()
    mccl_header_layer_folder("${_entry}" _folder)
    if(_folder)
      # The headers directly in the folder (transport-api, offload-wire),
      # linked one by one. CONFIGURE_DEPENDS re-runs CMake when one is
      # added or removed, so the staged roots follow (no source list is
      # globbed).
      file(GLOB _headers CONFIGURE_DEPENDS RELATIVE "${MCCL_LAYER_SOURCE_ROOT}"
           "${MCCL_LAYER_SOURCE_ROOT}/${_folder}/*.h")
      file(MAKE_DIRECTORY "${_root}/${_folder}")
      foreach(_header IN LISTS _headers)
        file(CREATE_LINK "${MCCL_LAYER_SOURCE_ROOT}/${_header}" "${_root}/${_header}" SYMBOLIC)
      endforeach()
    else()
      get_filename_component(_parent "${_root}/${_entry}" DIRECTORY)
      file(MAKE_DIRECTORY "${_parent}")
      file(CREATE_LINK "${MCCL_LAYER_SOURCE_ROOT}/${_entry}" "${_root}/${_entry}" SYMBOLIC)
    endif()
  endforeach()
endfunction()

# _mccl_give_layer_root(<target>): the include root of the layer <target>'s
# folder belongs to, and the public headers (include/ and the generated
# version header), which every layer may use.
function(_mccl_give_layer_root target)
  get_target_property(_type ${target} TYPE)
  get_property(_given GLOBAL PROPERTY _MCCL_LAYER_ROOT_GIVEN_${target})
  if(_given OR _type STREQUAL "INTERFACE_LIBRARY" OR _type STREQUAL "UTILITY")
    return()
  endif()
  set_property(GLOBAL PROPERTY _MCCL_LAYER_ROOT_GIVEN_${target} TRUE)
  get_target_property(_dir ${target} SOURCE_DIR)
  file(RELATIVE_PATH _rel "${MCCL_LAYER_SOURCE_ROOT}" "${_dir}")
  mccl_layer_of("${_rel}/" _layer)
  mccl_layer_allowed("${_layer}" _allowed _error)
  if(_error)
    message(FATAL_ERROR "${target} (src/${_rel}): ${_error}")
  endif()
  if(_allowed STREQUAL "*")
    set(_root "${MCCL_LAYER_SOURCE_ROOT}")
  else()
    _mccl_stage_layer_root("${_layer}" _root)
    set_property(GLOBAL APPEND PROPERTY _MCCL_LAYERED_TARGETS ${target})
    set_property(GLOBAL PROPERTY _MCCL_LAYER_OF_${target} "${_layer}")
  endif()
  if(_type MATCHES "^(STATIC|OBJECT)_LIBRARY$")
    set(_scope PUBLIC)
  else()
    set(_scope PRIVATE)
  endif()
  target_include_directories(${target} ${_scope}
    $<BUILD_INTERFACE:${_root}>
    $<BUILD_INTERFACE:${MCCL_PUBLIC_INCLUDE_DIR}>
    $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/include>)
endfunction()

function(_mccl_layer_targets_in dir out)
  get_property(_targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
  get_property(_subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
  foreach(_sub IN LISTS _subdirs)
    _mccl_layer_targets_in("${_sub}" _more)
    list(APPEND _targets ${_more})
  endforeach()
  set(${out} "${_targets}" PARENT_SCOPE)
endfunction()

function(mccl_apply_layer_include_roots)
  foreach(_dir IN LISTS ARGN)
    _mccl_layer_targets_in("${_dir}" _targets)
    foreach(_target IN LISTS _targets)
      _mccl_give_layer_root(${_target})
    endforeach()
  endforeach()
  # For the include probe: each layered target, its layer and the include
  # path it compiles with (its own root and those of what it links); for
  # the throw check, the file it builds.
  get_property(_layered GLOBAL PROPERTY _MCCL_LAYERED_TARGETS)
  set(_content "")
  foreach(_target IN LISTS _layered)
    get_property(_layer GLOBAL PROPERTY _MCCL_LAYER_OF_${_target})
    string(APPEND _content "list(APPEND MCCL_PROBE_TARGETS ${_target})\n"
      "set(MCCL_PROBE_${_target}_LAYER \"${_layer}\")\n"
      "set(MCCL_PROBE_${_target}_INCLUDES \"$<TARGET_PROPERTY:${_target},INCLUDE_DIRECTORIES>\")\n"
      "set(MCCL_PROBE_${_target}_FILE \"$<TARGET_FILE:${_target}>\")\n")
  endforeach()
  file(GENERATE OUTPUT "${MCCL_LAYER_INCLUDE_ROOTS}/targets.cmake" CONTENT "${_content}")
endfunction()
