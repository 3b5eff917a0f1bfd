#!/usr/bin/env bash
# The whole stack through real nginx (attestctl serve) driven by attest-device and an
# independent JWT library: see stack.py. Needs the release build.
set -euo pipefail
cd "$(dirname "$0")/../.."
exec python3 nginx/e2e/stack.py
