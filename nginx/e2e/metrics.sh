#!/usr/bin/env bash
# Prometheus metrics (issue #39): /metrics on the metrics listener, promtool, every family, no
# device or key labels, and counters that move by exactly the traffic sent (see metrics.py).
# Needs the release build. Ends with "metrics: N passed, M failed"; exits 1 on a failure.
set -euo pipefail
cd "$(dirname "$0")/../.."
exec python3 nginx/e2e/metrics.py
