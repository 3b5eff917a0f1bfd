#!/usr/bin/env bash
# `attestctl status` (the release binary, libcurl and all) against a metrics server that
# answers in the format and names of issue 39's metric contract, its counters growing at known
# rates: the screen's numbers, --json, the URL from --data's server.metricsListen, --watch on a
# terminal (frames drawn in place, no alternate screen, Ctrl-C exits 0, a failed scrape shown
# and retried) and through a pipe, and the errors (nothing listening, HTTP 501, HTML, not
# Prometheus's format, not AttestEdge's families). Needs no nginx. Ends with
# "status: N passed, M failed"; exits 1 on a failure.
set -euo pipefail
cd "$(dirname "$0")/../.."
exec python3 nginx/e2e/status.py
