#!/usr/bin/env bash
# Hostile input through real nginx (see hostile.py): malformed, oversized, slow and concurrent
# attestation requests; the flags pool under thousands of headers and its workers SIGKILLed
# with stream auth subrequests in flight; the feedback pool's bodies, 1,000 votes from one device
# and another app's ids. Needs the release build.
set -euo pipefail
cd "$(dirname "$0")/../.."
exec python3 nginx/e2e/hostile.py
