#!/usr/bin/env bash
# attestctl serve hardened (issue #7): nginx's own errors as JSON for malformed request lines,
# nginx workers and pools as server.user under root, a pool crashing at run time, bounded logs,
# nginx killed with -9, and a readiness probe that only our nginx can pass. See serve.py.
# Needs the release build. Ends with "serve: N passed, M failed"; exits 1 on a failure.
set -euo pipefail
cd "$(dirname "$0")/../.."
exec python3 nginx/e2e/serve.py
