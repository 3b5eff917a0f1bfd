#!/usr/bin/env bash
# The unit and in-process tests (swift test, the fuzz corpus replay included) under the
# toolchain's sanitizers, each in its own build directory (.build/<sanitizer>).
#
#   bash nginx/scripts/sanitize.sh [address] [thread]     (default: both)
#
# AddressSanitizer: out-of-bounds and use-after-free in Swift and in the C code it calls
# (our shims; Debian's libraries are not instrumented, their allocations are still checked).
# ThreadSanitizer: data races (the store's sync thread, the signing key's locks, tests that
# run in parallel). Exits non-zero when a sanitizer reports or a test fails.
set -euo pipefail
cd "$(dirname "$0")/../.."
source nginx/scripts/deps.sh
# The Swift runtime's backtracer would wait on a crashing process; the sanitizer reports it.
export SWIFT_BACKTRACE=enable=no
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:halt_on_error=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1}
status=0
for sanitizer in "${@:-address thread}"; do
  for s in $sanitizer; do
    started=$(date +%s)
    echo "==> swift test --sanitize=$s (.build/$s)"
    log=$(mktemp /tmp/attestedge-sanitize-$s.XXXXXX.log)
    if swift build --build-tests --build-path ".build/$s" --sanitize="$s" >"$log" 2>&1 \
       && swift test --skip-build --build-path ".build/$s" --sanitize="$s" >>"$log" 2>&1; then
      echo "sanitize $s: $(grep -E '^✔ Test run' "$log" | tail -1) ($(( $(date +%s) - started ))s)"
      rm -f "$log"
    else
      status=1
      echo "sanitize $s: FAILED ($(( $(date +%s) - started ))s); log $log" >&2
      grep -E "ERROR: (Address|Thread)Sanitizer|WARNING: ThreadSanitizer|SUMMARY|✘|error:" "$log" | head -20 >&2
    fi
  done
done
exit $status
