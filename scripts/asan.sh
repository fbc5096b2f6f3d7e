#!/usr/bin/env bash
# Builds the addon with AddressSanitizer + UndefinedBehaviorSanitizer into its own folder
# (WEIGHTMAP_BUILD_DIR, default build-asan/) and runs the suite's format and engine tests and the
# fuzz corpus against it (WEIGHTMAP_ADDON). node itself is not instrumented, so the ASan runtime
# is preloaded (LD_PRELOAD); leak detection is off because V8 keeps memory until exit by design.
# Any sanitizer report aborts the process, which fails the test (or, in the fuzz children, the
# case) that triggered it.
#
#   scripts/asan.sh                          # build, then format + engine tests + the fuzz corpus
#   WEIGHTMAP_FUZZ_BATCHES=20 scripts/asan.sh  # and 20 more batches of random fuzz cases
#   scripts/asan.sh test/formats/npy.test.ts # build, then only these jest arguments
set -euo pipefail
if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
  exit 0
fi

root="$(cd "$(dirname "$0")/.." && pwd)"
build="$(realpath -m "${WEIGHTMAP_BUILD_DIR:-$root/build-asan}")"
jobs="$(node -p 'require("os").availableParallelism?.() ?? require("os").cpus().length')"
sanitize="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g"

cd "$root"
# cmake-js sets CMAKE_CXX_FLAGS itself: the sanitizer flags go in the Release flags.
node node_modules/cmake-js/bin/cmake-js compile --directory "$root" --out "$build" --parallel "$jobs" --log-level warn \
  --CDCMAKE_CXX_FLAGS_RELEASE="-DNDEBUG $sanitize" --CDCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined"

export WEIGHTMAP_ADDON="$build/Release/weightmap.node"
# A build whose objects lack the instrumentation would pass everything and prove nothing.
if [[ "$(nm -D --undefined-only "$WEIGHTMAP_ADDON")" != *__asan_report* ]]; then
  echo "asan.sh: $WEIGHTMAP_ADDON is not instrumented (no __asan_report_* imports)" >&2
  exit 1
fi
export LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)"
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:halt_on_error=1:allocator_may_return_null=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
# Sanitized code runs several times slower: give each fuzz case more time.
export WEIGHTMAP_FUZZ_CASE_MS="${WEIGHTMAP_FUZZ_CASE_MS:-120000}"

if [ "$#" -gt 0 ]; then
  exec npx jest --runInBand "$@"
fi
exec npx jest --runInBand --testTimeout 600000 test/formats test/engines
