#!/usr/bin/env bash
# Installs what AttestEdge needs beyond Swift: Debian's C libraries and tools (libpq for the
# PostgreSQL store, the postgresql server for the tests' throwaway cluster), and (for the
# end-to-end tests) PyJWT and standardwebhooks from PyPI, and (for nginx/bench/all.sh) pyattest.
# ATTEST_DEPS=runtime (nginx/deploy/install.sh) installs only what a production host needs to build and
# run it. Installs only what is missing; safe to run again. Also defines release_build.
set -euo pipefail

case "${ATTEST_DEPS:-all}" in
  # nginx and its nchan module (the flag stream); the libraries the build links (their -dev packages bring the shared libraries the
  # binaries load); procps for /bin/kill, the units' ExecReload. No test or benchmark tooling.
  runtime) packages=(nginx libnginx-mod-nchan libssl-dev liblmdb-dev libcurl4-openssl-dev libpq-dev procps) ;;
  # run.sh, test.sh, the benchmarks: also the tests' PostgreSQL server, mdb_stat, spawn-fcgi,
  # faketime, wrk, Python and curl; openssl (the TLS suite's test CA), testssl.sh (which checks
  # the served TLS configuration) and prometheus (for promtool, which checks /metrics and the
  # alert rules; its own server is not needed, and Debian starts it only under systemd);
  # chromium, its driver and Debian's selenium for the console's browser suite (nginx/e2e/console.sh).
  all) packages=(nginx libnginx-mod-nchan libssl-dev liblmdb-dev lmdb-utils libcurl4-openssl-dev libpq-dev postgresql spawn-fcgi faketime wrk python3 python3-pip curl procps
                 openssl testssl.sh prometheus chromium chromium-driver python3-selenium) ;;
  *) echo "deps.sh: ATTEST_DEPS is runtime or all, not '$ATTEST_DEPS'" >&2; exit 2 ;;
esac
# ATTEST_EXTRA_PACKAGES: more Debian packages a caller needs (the profiler's perf and valgrind).
read -r -a deps_extra <<< "${ATTEST_EXTRA_PACKAGES:-}"
packages+=("${deps_extra[@]}")
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "==> installing Debian packages: ${missing[*]}"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
# ATTEST_NEEDS_SWIFT=0 (install.sh --no-build, installing binaries built elsewhere): no toolchain required.
if ! command -v swift >/dev/null; then
  if [ -x /opt/swift/usr/bin/swift ]; then export PATH=/opt/swift/usr/bin:$PATH
  elif [ "${ATTEST_NEEDS_SWIFT:-1}" = 1 ]; then
    echo "swift is not on PATH: install the Swift 6 toolchain first (https://swift.org/install)" >&2; exit 1
  fi
fi
# The toolchain leaves a `TemporaryDirectory.*` (and lock files) in $TMPDIR for each build
# step, six a build and about 40 a test run: every `swift` command of the scripts that source
# this file, and of the scripts they run (the function is exported), keeps them in the
# checkout's .build/tmp instead of /tmp. Only the toolchain's own $TMPDIR changes: the tests
# make their directories under /tmp by name.
ATTEST_SWIFT_TMP=${ATTEST_SWIFT_TMP:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/.build/tmp}
export ATTEST_SWIFT_TMP
swift() { mkdir -p "$ATTEST_SWIFT_TMP" && TMPDIR="$ATTEST_SWIFT_TMP" command swift "$@"; }
export -f swift
# release_build: `swift build -c release`, its last line only on success. On failure the last 40
# lines (where the compiler's errors are; `| tail -1` hid them) go to stderr, the full output
# stays in a log under $ATTEST_SWIFT_TMP, and it returns the build's status (set -e stops there).
release_build() {
  local log status=0
  mkdir -p "$ATTEST_SWIFT_TMP"
  log=$(mktemp "$ATTEST_SWIFT_TMP/release-build.XXXXXX.log")
  swift build -c release > "$log" 2>&1 || status=$?
  if [ "$status" = 0 ]; then
    tail -1 "$log"
    rm -f "$log"
    return 0
  fi
  echo "swift build -c release failed (status $status); its last 40 lines (full log: $log):" >&2
  tail -40 "$log" >&2
  return "$status"
}
# pip_need IMPORTS WHY PACKAGE…: installs PACKAGE… from PyPI unless `python3 -c IMPORTS` works
# (Debian's pip refuses system-wide installs without --break-system-packages).
pip_need() {
  python3 -c "$1" 2>/dev/null && return 0
  echo "==> installing ${*:3} from PyPI ($2)"
  python3 -m pip install --quiet --disable-pip-version-check "${@:3}" 2>/dev/null \
    || python3 -m pip install --quiet --disable-pip-version-check --break-system-packages "${@:3}"
}
if [ "${ATTEST_NEED_PYJWT:-0}" = 1 ]; then
  pip_need 'import jwt, cryptography' "the end-to-end token checks" pyjwt cryptography
  pip_need 'import standardwebhooks' "the end-to-end webhook signature checks" standardwebhooks
fi
if [ "${ATTEST_NEED_PYATTEST:-0}" = 1 ]; then
  pip_need 'import pyattest, pyhanko_certvalidator' "the benchmark's peer verifier" pyattest==1.0.5
fi
