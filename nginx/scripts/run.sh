#!/usr/bin/env bash
# Starts the whole stack on loopback: installs what is missing, builds release binaries and
# runs `attestctl serve` on the data directory ./var (or $ATTEST_EDGE_DATA). A fresh directory
# gets a demo organization and app, and a test CA that attest-device can enroll with (a demo
# convenience: production deployments never pass --test-ca). Ctrl-C stops everything.
# Extra arguments go to `attestctl serve` (e.g. --listen 127.0.0.1:9090 --workers 4).
set -euo pipefail
cd "$(dirname "$0")/../.."
source nginx/scripts/deps.sh
echo "==> release build (the first one takes a few minutes)"
release_build
exec .build/release/attestctl serve --data "${ATTEST_EDGE_DATA:-./var}" --test-ca "$@"
