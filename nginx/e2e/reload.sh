#!/usr/bin/env bash
# Zero-downtime swap of one endpoint through real nginx: refresh and challenge under load while
# the refresh binary is replaced and reloaded; a broken binary is refused. See reload.py.
set -euo pipefail
cd "$(dirname "$0")/../.."
exec python3 nginx/e2e/reload.py
