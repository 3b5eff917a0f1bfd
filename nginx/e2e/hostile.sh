#!/usr/bin/env bash
# Hostile input through real nginx (see hostile.py). Needs the release build.
set -euo pipefail
cd "$(dirname "$0")/../.."
exec python3 nginx/e2e/hostile.py
