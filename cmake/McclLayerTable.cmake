# The layer table of src/: which layers each layer may include besides
# itself. The one source of truth for both the include check
# (CheckLayering.cmake, CTest "layering") and the per-layer include roots
# the library targets compile with (McclLayers.cmake).
#
#   coll -> protocol -> transport -> common      (bootstrap, progress and topo
#                                                  from the side)
#   coll -> codec -> common                      (lossy compression, no transport)
#   setup (the one creation path)                over protocol and every transport
#   offload/client -> offload-wire -> common     (linked into libmccl)
#   offload/daemon                               over setup, coll and the wire
#   api, mpi, torch                              above everything
#
# "mccl" is the public API under include/, which every layer may use.
# "transport-api" means the interface headers directly under src/transport/;
# "transport/<name>" is one transport's folder. Layers above transport see
# only its interfaces, never an implementation folder; a transport folder
# sees its own files, the interfaces and common (MCCL_LAYER_ALLOW_transport),
# never a sibling transport. The in-process world (threads as ranks) is a
# bootstrap that runs on the sim fabric, hence bootstrap -> transport/sim.
# Likewise "offload-wire" is the files directly under src/offload/ (what
# client and daemon exchange), "offload/<part>" one part's folder.
set(MCCL_LAYER_ALLOW_common "common;mccl")
set(MCCL_LAYER_ALLOW_topo "topo;common;mccl")
set(MCCL_LAYER_ALLOW_bootstrap "bootstrap;transport-api;transport/sim;common;mccl")
set(MCCL_LAYER_ALLOW_transport "transport-api;common;mccl")
set(MCCL_LAYER_ALLOW_protocol "protocol;transport-api;common;mccl")
# The codec (compression inside the collectives) knows nothing of
# transports or collectives.
set(MCCL_LAYER_ALLOW_codec "codec;common;mccl")
set(MCCL_LAYER_ALLOW_coll "coll;codec;protocol;transport-api;common;mccl")
set(MCCL_LAYER_ALLOW_progress "progress;protocol;transport-api;topo;common;mccl")
# Ranks as tasks on the in-memory fabric in virtual time (bench/scale, the
# in-process scale test): the collectives over the sim transport.
set(MCCL_LAYER_ALLOW_simworld "simworld;coll;codec;protocol;transport-api;transport/sim;common;mccl")
# Communicator creation picks and configures the transports themselves.
set(MCCL_LAYER_ALLOW_setup
    "setup;protocol;transport-api;transport/sim;transport/udp;transport/tcp;transport/ucx;transport/ibud;common;mccl")
# The offload engine (src/offload). The client runs in the application
# (libmccl) and needs only the wire and common. The daemon creates
# communicators (setup, hence every layer setup may use) and runs the
# collectives; never bootstrap, progress or topo, which its standalone
# build for a SmartNIC's Arm cores (src/offload/CMakeLists.txt) lacks,
# and never the client.
set(MCCL_LAYER_ALLOW_offload-wire "offload-wire;common;mccl")
set(MCCL_LAYER_ALLOW_offload/client "offload/client;offload-wire;common;mccl")
set(MCCL_LAYER_ALLOW_offload/daemon
    "offload/daemon;offload-wire;setup;coll;codec;protocol;transport-api;transport/sim;transport/udp;transport/tcp;transport/ucx;transport/ibud;common;mccl")
set(MCCL_LAYERS_ABOVE_EVERYTHING "api;mpi;torch")
# Files of an allowed layer that a layer may still not include (checked by
# CheckLayering.cmake only: the include roots are per folder). The settings
# registry is read at the top (api, setup, bootstrap, the programs) and
# passed down as config structs (setup/transport_settings.h,
# setup/protocol_settings.h): the transports, their interfaces and the
# protocol, the collectives, the codec, the progress engines and the
# topology take their knobs as given.
set(MCCL_LAYER_DENY_transport "common/settings.h")
set(MCCL_LAYER_DENY_protocol "common/settings.h")
set(MCCL_LAYER_DENY_coll "common/settings.h")
set(MCCL_LAYER_DENY_codec "common/settings.h")
set(MCCL_LAYER_DENY_progress "common/settings.h")
set(MCCL_LAYER_DENY_topo "common/settings.h")
set(MCCL_TRANSPORTS "sim;udp;tcp;ucx;ibud")
set(MCCL_OFFLOAD_PARTS "client;daemon")

# mccl_header_layer_folder(<layer> <out>): for a layer made of the headers
# directly in a folder (transport-api, offload-wire), that folder; else "".
function(mccl_header_layer_folder layer out)
  if(layer STREQUAL "transport-api")
    set(${out} "transport" PARENT_SCOPE)
  elseif(layer STREQUAL "offload-wire")
    set(${out} "offload" PARENT_SCOPE)
  else()
    set(${out} "" PARENT_SCOPE)
  endif()
endfunction()

# mccl_layer_of(<path> <out>): the layer an include path or a file under
# src/ names: transport-api for transport/x.h, transport/<name> for a
# transport folder, offload-wire for offload/x.h (and the folder offload/
# itself, where the wire's target lives), offload/<part> for a part's
# folder, else its first folder ("" when it names none).
function(mccl_layer_of path out)
  if(path MATCHES "^transport/[^/]+$")
    set(${out} "transport-api" PARENT_SCOPE)
  elseif(path MATCHES "^(transport/[^/]+)/")
    set(${out} "${CMAKE_MATCH_1}" PARENT_SCOPE)
  elseif(path MATCHES "^offload/[^/]*$")
    set(${out} "offload-wire" PARENT_SCOPE)
  elseif(path MATCHES "^(offload/[^/]+)/")
    set(${out} "${CMAKE_MATCH_1}" PARENT_SCOPE)
  elseif(path MATCHES "^([^/]+)/")
    set(${out} "${CMAKE_MATCH_1}" PARENT_SCOPE)
  else()
    set(${out} "" PARENT_SCOPE)
  endif()
endfunction()

# mccl_layer_denied(<layer> <out>): the files <layer> (as mccl_layer_of
# names it) may not include although their layer is allowed: a transport
# folder's and the transport interfaces' are MCCL_LAYER_DENY_transport.
function(mccl_layer_denied layer out)
  if(layer STREQUAL "transport-api" OR layer MATCHES "^transport/")
    set(${out} "${MCCL_LAYER_DENY_transport}" PARENT_SCOPE)
  else()
    set(${out} "${MCCL_LAYER_DENY_${layer}}" PARENT_SCOPE)
  endif()
endfunction()

# mccl_layer_allowed(<layer> <out> <error>): what <layer> (as mccl_layer_of
# names it) may include, or an error text when the table does not know it.
# A layer above everything gets "*".
function(mccl_layer_allowed layer out error)
  set(${out} "" PARENT_SCOPE)
  set(${error} "" PARENT_SCOPE)
  if(layer MATCHES "^transport/(.+)$")
    if(NOT CMAKE_MATCH_1 IN_LIST MCCL_TRANSPORTS)
      set(${error} "transport folder '${CMAKE_MATCH_1}' is not in the layer table" PARENT_SCOPE)
      return()
    endif()
    set(${out} "${layer};${MCCL_LAYER_ALLOW_transport}" PARENT_SCOPE)
  elseif(layer STREQUAL "transport-api")
    set(${out} "${MCCL_LAYER_ALLOW_transport}" PARENT_SCOPE)
  elseif(layer IN_LIST MCCL_LAYERS_ABOVE_EVERYTHING)
    set(${out} "*" PARENT_SCOPE)
  elseif(DEFINED MCCL_LAYER_ALLOW_${layer})
    set(${out} "${MCCL_LAYER_ALLOW_${layer}}" PARENT_SCOPE)
  else()
    set(${error} "layer '${layer}' is not in the layer table (cmake/McclLayerTable.cmake)" PARENT_SCOPE)
  endif()
endfunction()
