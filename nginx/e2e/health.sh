#!/usr/bin/env bash
# GET /healthz through real nginx (issue #39, item 2): 200 normally; a pool killed with -9 → 503
# naming it → 200 once serve restarted it; the ephemeral map filled by real refreshes past
# health.maxMapPercent (and on until the store refuses) → 503 store_map → 200 once the map is
# raised and the pools reloaded; no tenant's name in any answer; req/s of /healthz and of the
# challenge through nginx in one run (wrk). See health.py. Needs the release build. Ends with
# "health: N passed, M failed"; exits 1 on a failure.
set -euo pipefail
cd "$(dirname "$0")/../.."
exec python3 nginx/e2e/health.py
