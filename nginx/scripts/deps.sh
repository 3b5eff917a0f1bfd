#!/usr/bin/env bash
# Installs what AttestEdge needs beyond Swift: Debian's C libraries and tools (libpq for the
# PostgreSQL store, the postgresql server for the tests' throwaway cluster), and (for the
# end-to-end tests) PyJWT and standardwebhooks from PyPI, and (for nginx/bench/all.sh) pyattest.
# Installs only what is missing; safe to run again.
set -euo pipefail

packages=(nginx libssl-dev liblmdb-dev lmdb-utils libcurl4-openssl-dev libpq-dev postgresql spawn-fcgi faketime wrk python3 python3-pip curl procps)
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
if ! command -v swift >/dev/null; then
  if [ -x /opt/swift/usr/bin/swift ]; then export PATH=/opt/swift/usr/bin:$PATH; else
    echo "swift is not on PATH: install the Swift 6 toolchain first (https://swift.org/install)" >&2; exit 1
  fi
fi
if [ "${ATTEST_NEED_PYJWT:-0}" = 1 ] && ! python3 -c 'import jwt, cryptography' 2>/dev/null; then
  echo "==> installing PyJWT and cryptography from PyPI (for the end-to-end token checks)"
  python3 -m pip install --quiet --disable-pip-version-check pyjwt cryptography 2>/dev/null \
    || python3 -m pip install --quiet --disable-pip-version-check --break-system-packages pyjwt cryptography
fi
if [ "${ATTEST_NEED_PYJWT:-0}" = 1 ] && ! python3 -c 'import standardwebhooks' 2>/dev/null; then
  echo "==> installing standardwebhooks from PyPI (the end-to-end webhook signature checks)"
  python3 -m pip install --quiet --disable-pip-version-check standardwebhooks 2>/dev/null \
    || python3 -m pip install --quiet --disable-pip-version-check --break-system-packages standardwebhooks
fi
if [ "${ATTEST_NEED_PYATTEST:-0}" = 1 ] && ! python3 -c 'import pyattest, pyhanko_certvalidator' 2>/dev/null; then
  echo "==> installing pyattest from PyPI (the benchmark's peer verifier)"
  python3 -m pip install --quiet --disable-pip-version-check pyattest==1.0.5 2>/dev/null \
    || python3 -m pip install --quiet --disable-pip-version-check --break-system-packages pyattest==1.0.5
fi
