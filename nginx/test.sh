#!/usr/bin/env bash
# The full test suite: installs what is missing, builds, then runs unit and in-process tests
# (swift test) and the end-to-end suites through real nginx. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
ATTEST_NEED_PYJWT=1 source nginx/scripts/deps.sh

echo "==> unit and in-process tests (swift test; the first build takes a few minutes)"
log=$(mktemp /tmp/attestedge-swift-test.XXXXXX.log)
set +e
swift test 2>&1 | tee "$log" | grep -E "^(✘|✔ Test run|✘ Test run)|error:|Executed"
status=${PIPESTATUS[0]}
set -e
if [ "$status" -ne 0 ]; then
  echo "swift test failed (status $status); full log in $log" >&2
  grep -E "✘|error" "$log" | head -50 >&2
  exit "$status"
fi

echo "==> release build"
swift build -c release 2>&1 | tail -1

failed=()
for suite in nginx/e2e/*.sh; do
  [ -e "$suite" ] || continue
  echo "==> end-to-end: $suite"
  bash "$suite" || failed+=("$suite")
done
if ((${#failed[@]})); then
  echo "==> FAILED end-to-end suites: ${failed[*]}" >&2
  exit 1
fi
echo "==> all tests passed: swift test and every end-to-end suite"
