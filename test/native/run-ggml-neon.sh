#!/bin/sh
# Cross-compiles test/native/ggml_check.cc with the kernels for AArch64 (ARMv8.2-A + fp16 +
# dotprod, the flags CMakeLists.txt gives *_neon.cc) and runs it under qemu-aarch64, which
# reports dotprod and fp16 with -cpu max. Needs g++-aarch64-linux-gnu and qemu-user (Debian).
#   sh test/native/run-ggml-neon.sh
set -e
cd "$(dirname "$0")/../.."
out=${TMPDIR:-/tmp}/weightmap-ggml-neon
mkdir -p "$out"
aarch64-linux-gnu-g++ -O2 -march=armv8.2-a+fp16+dotprod -std=c++17 -Wall -Wextra -Wno-unused-parameter -Inative -static \
  -o "$out/ggml_check" test/native/ggml_check.cc native/kernels/ggml_blocks.cc native/kernels/generic/ggml_dot.cc \
  native/kernels/arm/neon/ggml_dot_neon.cc native/kernels/arm/neon/kernels_neon.cc native/kernels/generic/kernels_scalar.cc \
  native/kernels/kernels_common.cc native/kernels/dispatch.cc -lpthread
qemu-aarch64 -cpu max "$out/ggml_check"
