# Cross-compiling for 64-bit ARM Linux with Debian's GNU cross toolchain (g++-aarch64-linux-gnu). The sysroot
# is Debian's multiarch one; binaries run under `qemu-aarch64-static -L /usr/aarch64-linux-gnu` (scripts/cross_arm64.sh).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
# Programs (protoc, python) from the host; libraries and headers (zlib, OpenMP) from the target's root only.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
