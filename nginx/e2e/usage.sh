#!/usr/bin/env bash
# Monthly-active-device accounting through real nginx (attestctl serve with attest-mad): limits
# and grace, 402 and its body, fingerprints, heartbeats, the organization bucket's 429, the
# usage API against attestctl usage and the store, and 50 racing devices at the limit.
set -euo pipefail
cd "$(dirname "$0")/../.."
exec python3 nginx/e2e/usage.py
