#!/usr/bin/env bash
# Runs the end-to-end suites one after the other: every nginx/e2e/NAME.sh, or the NAMEs given.
# A suite is NAME.sh (its entry; its Python, if any, is NAME.py beside it; what the suites
# share is in lib/), prints a PASS or FAIL line per check and ends with "NAME: N passed,
# M failed", exiting non-zero on a failure. This runner prints each suite's output as it comes,
# then one table (each suite's result, its checks from that last line, its wall time) and the
# line "e2e: N suites passed, M failed in S s". Exits 1 when a suite failed or printed no
# summary line; 2 on an unknown NAME.
#
#   bash nginx/e2e/run.sh                  every suite
#   bash nginx/e2e/run.sh stack hostile    those two
#
# The suites need the release build (swift build -c release; nginx/scripts/test.sh builds it
# first; ATTEST_BIN=DIR names other binaries). With ATTEST_E2E_STORE=postgres and
# ATTEST_TEST_POSTGRES_URL, each stack's store is a database of its own in that cluster
# (lib/stack.py); the summary says so.
set -uo pipefail
cd "$(dirname "$0")/../.."

suites=("$@")
if ((${#suites[@]} == 0)); then
  for f in nginx/e2e/*.sh; do
    name=$(basename "$f" .sh)
    [ "$name" = run ] || suites+=("$name")
  done
fi
for name in "${suites[@]}"; do
  if [ "$name" = run ] || [ ! -f "nginx/e2e/$name.sh" ]; then
    echo "run.sh: no suite nginx/e2e/$name.sh" >&2
    exit 2
  fi
done
store=""
[ "${ATTEST_E2E_STORE:-}" = postgres ] && store=" (each stack's store in PostgreSQL)"

# Python's own output reaches the log in the order it was printed, interleaved with its children's.
export PYTHONUNBUFFERED=1
logs=$(mktemp -d /tmp/attestedge-e2e.XXXXXX)
rows=() failed=()
started=$(date +%s%N)
for name in "${suites[@]}"; do
  echo "==> end-to-end: $name$store"
  t0=$(date +%s%N)
  bash "nginx/e2e/$name.sh" 2>&1 | tee "$logs/$name.log"
  status=${PIPESTATUS[0]}
  seconds=$(awk -v ns=$(($(date +%s%N) - t0)) 'BEGIN { printf "%.1f", ns / 1e9 }')
  summary=$(grep -aE "^$name: [0-9]+ passed, [0-9]+ failed" "$logs/$name.log" | tail -1)
  if [ -z "$summary" ]; then
    checks="no summary line" result=FAILED
  else
    read -r passed failures < <(sed -E 's/^[^:]*: ([0-9]+) passed, ([0-9]+) failed.*/\1 \2/' <<< "$summary")
    checks="$passed/$((passed + failures))" result=passed
  fi
  [ "$status" = 0 ] || result="FAILED (exit $status)"
  [ "$result" = passed ] || failed+=("$name")
  rows+=("$(printf '  %-12s %-18s %-16s %8s s' "$name" "$result" "$checks" "$seconds")")
done
total=$(awk -v ns=$(($(date +%s%N) - started)) 'BEGIN { printf "%.1f", ns / 1e9 }')

echo "==> end-to-end summary$store"
printf '  %-12s %-18s %-16s %10s\n' suite result "checks passed" "wall time"
printf '%s\n' "${rows[@]}"
if ((${#failed[@]})); then
  echo "e2e: $((${#suites[@]} - ${#failed[@]})) suites passed, ${#failed[@]} failed (${failed[*]}) in $total s;" \
       "their output is in $logs"
  exit 1
fi
rm -rf "$logs"
echo "e2e: ${#suites[@]} suites passed, 0 failed in $total s"
