# Cross-compiling for aarch64 Linux (e.g. a BlueField DPU's Arm cores) with
# Debian's cross toolchain: apt-get install g++-aarch64-linux-gnu
# (qemu-user runs the result here). Used by scripts/cross-aarch64.sh.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(_triple aarch64-linux-gnu)
set(CMAKE_C_COMPILER ${_triple}-gcc)
set(CMAKE_CXX_COMPILER ${_triple}-g++)
# Debian's multiarch layout: target libraries under /usr/lib/aarch64-linux-gnu.
set(CMAKE_FIND_ROOT_PATH /usr/${_triple} /usr/lib/${_triple})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /usr/${_triple})
