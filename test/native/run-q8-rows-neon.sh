#!/bin/sh
# Cross-compiles test/native/q8_rows_check.cc with the NEON kernels (the flags CMakeLists.txt gives
# *_neon.cc) and runs it under qemu-aarch64, as run-ggml-neon.sh does for the ggml kernels.
#   sh test/native/run-q8-rows-neon.sh
set -e
cd "$(dirname "$0")/../.."
out=${TMPDIR:-/tmp}/weightmap-q8-rows-neon
mkdir -p "$out"
aarch64-linux-gnu-g++ -O2 -march=armv8.2-a+fp16+dotprod -std=c++17 -Wall -Wextra -Wno-unused-parameter -Inative -static \
  -o "$out/q8_rows_check" test/native/q8_rows_check.cc native/kernels/ggml_blocks.cc native/kernels/generic/ggml_dot.cc \
  native/kernels/arm/neon/ggml_dot_neon.cc native/kernels/arm/neon/kernels_neon.cc native/kernels/generic/kernels_scalar.cc \
  native/kernels/kernels_common.cc native/kernels/dispatch.cc -lpthread
qemu-aarch64 -cpu max "$out/q8_rows_check"
