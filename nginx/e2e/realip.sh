#!/usr/bin/env bash
# docs/operations.md's "behind a load balancer" set-up through real nginx: without realip a client's
# X-Forwarded-For changes nothing; with its two lines the per-IP buckets follow the
# header from a trusted peer, and only from it. See realip.py.
set -euo pipefail
cd "$(dirname "$0")/../.."
exec python3 nginx/e2e/realip.py
