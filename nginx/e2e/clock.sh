#!/usr/bin/env bash
# The wall clock stepping forward and back under a running stack (libfaketime; see
# clock.py). Needs the release build and the faketime package (nginx/scripts/deps.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
exec python3 nginx/e2e/clock.py
