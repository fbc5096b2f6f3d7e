#!/usr/bin/env bash
# Runs tests on the linux-arm64 prebuild under qemu-user, with Debian 12's arm64 Node 18 unpacked
# (not installed) into build-arm64-node/. Needs, once, as root:
#   dpkg --add-architecture arm64 && apt-get update && apt-get install qemu-user
# and prebuilds/linux-arm64 (WEIGHTMAP_PREBUILD_ARCHS=x64,arm64 npm run build:prebuilds).
# Usage: scripts/test-arm64.sh [jest arguments]; by default the tests below, in one process:
# qemu-user without binfmt_misc cannot start an arm64 child process.
set -euo pipefail
if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
  exit 0
fi
cd "$(dirname "$0")/.."

addon=prebuilds/linux-arm64/weightmap.napi.glibc.node
sysroot=build-arm64-node/root
[ -f "$addon" ] || { echo "$addon is missing: WEIGHTMAP_PREBUILD_ARCHS=x64,arm64 npm run build:prebuilds" >&2; exit 1; }
command -v qemu-aarch64 >/dev/null || { echo "qemu-aarch64 is missing: apt-get install qemu-user" >&2; exit 1; }

if [ ! -x "$sysroot/usr/bin/node" ]; then
  dpkg --print-foreign-architectures | grep -qx arm64 ||
    { echo "arm64 packages are not available: dpkg --add-architecture arm64 && apt-get update" >&2; exit 1; }
  mkdir -p build-arm64-node/debs
  # Debian 12's nodejs:arm64 and what it loads (apt-cache depends nodejs:arm64 libnode108:arm64).
  (cd build-arm64-node/debs && apt-get download nodejs:arm64 libnode108:arm64 libc6:arm64 libgcc-s1:arm64 \
    libstdc++6:arm64 libuv1:arm64 libssl3:arm64 libicu72:arm64 libc-ares2:arm64 libbrotli1:arm64 \
    libnghttp2-14:arm64 zlib1g:arm64 node-acorn node-cjs-module-lexer node-undici)
  for deb in build-arm64-node/debs/*.deb; do dpkg-deb -x "$deb" "$sysroot"; done
fi

# jest resolves modules with unrs-resolver, a native package: its arm64 build, from the npm
# registry, found through NODE_PATH.
resolver=build-arm64-node/node_modules/@unrs/resolver-binding-linux-arm64-gnu
if [ ! -f "$resolver/package.json" ]; then
  version=$(node -p 'require("unrs-resolver/package.json").version')
  mkdir -p "$resolver"
  tgz=$(cd build-arm64-node && npm pack --silent "@unrs/resolver-binding-linux-arm64-gnu@$version")
  tar xzf "build-arm64-node/$tgz" -C "$resolver" --strip-components=1
fi
export NODE_PATH="$PWD/build-arm64-node/node_modules"

node=("qemu-aarch64" "-L" "$sysroot" "$sysroot/usr/bin/node")
"${node[@]}" -p '`arm64 Node ${process.version} (${process.arch}), N-API ${process.versions.napi}`'
if [ $# -eq 0 ]; then
  # Every kernel test (the NEON table against the scalar reference) but dispatch's, which starts
  # child processes; the decoder, TLLM and Moondream engines on their fixtures; dispose.
  set -- test/kernels test/engines/decoder-llama.test.ts test/engines/decoder-qwen3.test.ts \
    test/engines/tllm.test.ts test/engines/moondream.test.ts test/package/dispose.test.ts \
    --testPathIgnorePatterns 'dispatch\.test'
fi
# Emulated, a test runs 20 to 50 times slower than natively: no per-test time limit that means anything.
WEIGHTMAP_ADDON="$addon" "${node[@]}" node_modules/jest/bin/jest.js --runInBand --testTimeout 1800000 "$@"
