# The one place MCCL's version is written. The top-level project and the
# daemon's standalone build (src/offload) take it from here, and the headers'
# MCCL_VERSION_* are generated from it (version_number.h.in).
set(MCCL_VERSION 0.1.0)
