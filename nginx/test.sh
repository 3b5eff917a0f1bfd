#!/usr/bin/env bash
# The full test suite: installs what is missing, builds, then runs unit and in-process tests
# (swift test) and the end-to-end suites through real nginx. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
ATTEST_NEED_PYJWT=1 source nginx/scripts/deps.sh

echo "==> unit and in-process tests (swift test)"
swift test 2>&1 | tee /tmp/attestedge-swift-test.log | grep -E "^(✘|✔ Test run|✘ Test run)|error:|Executed" || true
status=${PIPESTATUS[0]}
if [ "$status" -ne 0 ]; then
  echo "swift test failed (status $status); full log in /tmp/attestedge-swift-test.log" >&2
  grep -E "✘|error" /tmp/attestedge-swift-test.log | head -50 >&2
  exit "$status"
fi

echo "==> release build"
swift build -c release 2>&1 | tail -1

for suite in nginx/e2e/*.sh; do
  [ -e "$suite" ] || continue
  echo "==> end-to-end: $suite"
  bash "$suite"
done
echo "==> all tests passed"
