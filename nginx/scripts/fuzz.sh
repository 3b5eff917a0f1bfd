#!/usr/bin/env bash
# Coverage-guided fuzzing with libFuzzer (the Swift toolchain's -sanitize=fuzzer) and
# AddressSanitizer: builds attest-fuzz into .build/fuzz, then runs every target (or those
# named in ATTEST_FUZZ_TARGETS) for SECONDS each (default 60), one after the other.
#
#   bash nginx/scripts/fuzz.sh [SECONDS]
#
# Each target starts from its seeds in Tests/FuzzCorpus/<target>/ plus what earlier runs
# found (.build/fuzz-corpus/<target>/, not kept in git). A crash stops the run: the input is
# left in .build/fuzz-artifacts/<target>/; fix the bug, copy the input into
# Tests/FuzzCorpus/<target>/ (swift test replays it from then on) and add a unit test where
# the bug lived. One summary line per target: runs, execs/s, coverage (cov: edges, ft:
# features), corpus size. Exits non-zero on any crash.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-60}
source nginx/scripts/deps.sh
targets=${ATTEST_FUZZ_TARGETS:-cbor der authdata attestation assertion request challenge jwt fastcgi receipt}

echo "==> building attest-fuzz with -sanitize=fuzzer,address (.build/fuzz)"
swift build -c release --build-path .build/fuzz --product attest-fuzz \
  -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING \
  -Xswiftc -Xclang-linker -Xswiftc -fuse-ld=lld 2>&1 | grep -v "ld.gold: warning" | tail -1
binary=.build/fuzz/release/attest-fuzz

# The Swift runtime's backtracer would wait on a crashing fuzzer; libFuzzer reports itself.
export SWIFT_BACKTRACE=enable=no
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1}
failed=()
for target in $targets; do
  work=.build/fuzz-corpus/$target artifacts=.build/fuzz-artifacts/$target
  mkdir -p "$work" "$artifacts"
  log=.build/fuzz-artifacts/$target.log
  marker=$(mktemp /tmp/attest-fuzz-marker.XXXXXX)
  set +e
  ATTEST_FUZZ_TARGET=$target "$binary" "$work" "Tests/FuzzCorpus/$target" \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$artifacts/" >"$log" 2>&1
  status=$?
  set -e
  # The request and fastcgi targets' data directories (a fuzzer exits without cleaning up).
  find /tmp -maxdepth 1 -name 'attest-fuzz-??????' -newer "$marker" -exec rm -rf {} +
  rm -f "$marker"
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+' "$log" | tail -1)
  if [ "$status" -ne 0 ]; then
    failed+=("$target")
    echo "fuzz $target: CRASH (status $status) after ${runs:-?} runs; input in $artifacts/, log $log" >&2
    grep -E "fuzz property violated|Fatal error|ERROR: AddressSanitizer|SUMMARY" "$log" | head -5 >&2
  else
    echo "fuzz $target: ${seconds}s, ${runs:-0} runs, ${rate:-0} execs/s, ${cov:-no coverage line}"
  fi
done
if ((${#failed[@]})); then
  echo "fuzz: crashes in ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: $(wc -w <<<"$targets") targets, 0 crashes"
