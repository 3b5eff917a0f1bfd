#!/usr/bin/env bash
# Hostile input through real nginx (see hostile.py): malformed, oversized, slow and concurrent
# attestation requests; the flags pool under thousands of headers and its workers SIGKILLed
# with stream auth subrequests in flight. Needs the release build.
set -euo pipefail
cd "$(dirname "$0")/../.."
exec python3 nginx/e2e/hostile.py
