#!/usr/bin/env bash
# The full test suite: installs what is missing, builds, then runs unit and in-process tests
# (swift test), the end-to-end suites through real nginx (nginx/e2e/run.sh: the stack, the
# hostile-input and fault suites, ...), a fuzz smoke pass and the tests under
# AddressSanitizer. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/../.."
ATTEST_NEED_PYJWT=1 source nginx/scripts/deps.sh

# One throwaway PostgreSQL cluster for the whole run (nginx/scripts/postgres.sh): the store
# conformance suite in `swift test` and the multi-host e2e suite (nginx/e2e/hosts.sh) use it
# through ATTEST_TEST_POSTGRES_URL. Stopped and deleted on exit, failures included.
echo "==> PostgreSQL for the store tests (a throwaway cluster on loopback)"
pg_dir=$(mktemp -d /tmp/attestedge-test-pg.XXXXXX)
trap 'bash nginx/scripts/postgres.sh destroy "$pg_dir" || echo "could not stop the PostgreSQL cluster in $pg_dir" >&2' EXIT
ATTEST_TEST_POSTGRES_URL=$(bash nginx/scripts/postgres.sh start "$pg_dir")
export ATTEST_TEST_POSTGRES_URL
# The conformance suite fails, rather than skips, its PostgreSQL cases without the URL.
export ATTEST_REQUIRE_POSTGRES=1
echo "    ATTEST_TEST_POSTGRES_URL='$ATTEST_TEST_POSTGRES_URL'"

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

echo "==> the service tests again, every fixture's store in PostgreSQL (ATTEST_TEST_STORE=postgres)"
set +e
ATTEST_TEST_STORE=postgres swift test --skip-build --filter AttestServiceTests 2>&1 | tee "$log" | grep -E "^(✘|✔ Test run|✘ Test run)|error:"
status=${PIPESTATUS[0]}
set -e
if [ "$status" -ne 0 ]; then
  echo "swift test on PostgreSQL failed (status $status); full log in $log" >&2
  exit "$status"
fi
rm -f "$log"  # kept only when a run failed

echo "==> release build"
release_build

# The benchmark's ablation variants (nginx/bench/ablate.sh) are `#if ATTEST_ABLATE` code that no
# other build compiles; a change that breaks them would otherwise surface only 25 minutes into
# nginx/bench/all.sh. A debug build of the serving library with the switch set, in a scratch
# path of its own (the main builds stay as they are).
echo "==> the ablation variants compile (-DATTEST_ABLATE, .build/ablate-check)"
started=$SECONDS
set +e
swift build --target AttestService --scratch-path .build/ablate-check -Xswiftc -DATTEST_ABLATE > "$log" 2>&1
status=$?
set -e
if [ "$status" -ne 0 ]; then
  tail -40 "$log" >&2
  echo "the ablation build failed (status $status): see nginx/bench/ablate.sh" >&2
  exit "$status"
fi
echo "    compiled in $((SECONDS - started)) s"
rm -f "$log"

# Every end-to-end suite (nginx/e2e/run.sh: one summary of their results, checks and times at
# the end); then the suites that exercise the whole store through every endpoint, again with
# each stack's store in a database of its own in the cluster (the LMDB-only suites, durability,
# fault, ops' backups, run once above).
e2e_failed=0
bash nginx/e2e/run.sh || e2e_failed=1
ATTEST_E2E_STORE=postgres bash nginx/e2e/run.sh stack usage claims webhooks health receipts flags feedback org console || e2e_failed=1
if [ "$e2e_failed" != 0 ]; then
  echo "==> FAILED end-to-end suites (see the two summaries above)" >&2
  exit 1
fi

# Fuzz smoke pass: every target for a few seconds from its corpus (the corpus replay checks
# every crash ever found); then the unit tests under AddressSanitizer. ATTEST_FUZZ_SECONDS=0
# or ATTEST_SANITIZERS="" skips them locally.
fuzz_seconds=${ATTEST_FUZZ_SECONDS:-5}
if [ "$fuzz_seconds" != 0 ]; then
  echo "==> fuzz smoke pass (nginx/scripts/fuzz.sh $fuzz_seconds)"
  started=$SECONDS
  bash nginx/scripts/fuzz.sh "$fuzz_seconds"
  echo "==> fuzz smoke pass took $((SECONDS - started))s"
fi
sanitizers=${ATTEST_SANITIZERS-address}
if [ -n "$sanitizers" ]; then
  started=$SECONDS
  bash nginx/scripts/sanitize.sh $sanitizers
  echo "==> sanitizers ($sanitizers) took $((SECONDS - started))s"
fi
echo "==> all tests passed: swift test, every end-to-end suite, the fuzz smoke pass and the sanitizers"
