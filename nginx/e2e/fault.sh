#!/usr/bin/env bash
# Faults through real nginx (see fault.py). Needs the release build, root for the tmpfs
# checks (skipped otherwise, and said so).
set -euo pipefail
cd "$(dirname "$0")/../.."
exec python3 nginx/e2e/fault.py
