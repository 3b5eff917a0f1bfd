#!/usr/bin/env bash
# Custom claims, subjects and operator flags through real nginx (attestctl serve) with
# attest-device: a conditional claim that changes after an operator flag and one refresh,
# an entitlement in the next token, a blocked device's 403 and its new key's isValid false;
# subject link policies (signed, operator, asserted) against a device asserting another's id.
# Needs the release build.
set -euo pipefail
cd "$(dirname "$0")/../.."
exec python3 nginx/e2e/claims.py
