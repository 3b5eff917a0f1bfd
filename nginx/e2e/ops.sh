#!/usr/bin/env bash
# Operations through real nginx: a backup taken under write load restores into a new data
# directory that serves a device enrolled before it; attestctl doctor on a healthy and on a
# broken stack. See ops.py.
set -euo pipefail
cd "$(dirname "$0")/../.."
exec python3 nginx/e2e/ops.py
