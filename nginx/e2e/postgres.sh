#!/usr/bin/env bash
# The PostgreSQL backend's operator path on one host, through real nginx: store copy from a
# serving LMDB store, the switch, migrate, doctor, stats and check, and a database that goes
# away and comes back (503 meanwhile, then recovery without a restart). Uses
# ATTEST_TEST_POSTGRES_URL (nginx/scripts/test.sh starts a throwaway cluster), else starts its own.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ -z "${ATTEST_TEST_POSTGRES_URL:-}" ]; then
    dir=$(mktemp -d /tmp/attestedge-pg-XXXXXX)
    trap 'bash nginx/scripts/postgres.sh stop "$dir" >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
    ATTEST_TEST_POSTGRES_URL=$(bash nginx/scripts/postgres.sh start "$dir")
    export ATTEST_TEST_POSTGRES_URL
fi
python3 nginx/e2e/postgres.py
