#!/usr/bin/env bash
# Receipts redeemed with Apple (issue 40) through real nginx and attest-receipts, with a local
# HTTPS stand-in for Apple's endpoint (lib/apple_standin.py): a software device's receipt is
# redeemed, the token carries the risk metric, and each of Apple's error answers is handled as
# documented (304, 400 both kinds, 401 stopping the team, 404, 429 and 500 backing off).
set -euo pipefail
cd "$(dirname "$0")/../.."
exec python3 nginx/e2e/receipts.py
