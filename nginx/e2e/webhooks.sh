#!/usr/bin/env bash
# Webhooks through real nginx and the delivery worker (attestctl serve --allow-private-webhooks)
# with a receiver on 127.0.0.1: a real enrollment's events and both signatures (Standard
# Webhooks checked with the standardwebhooks package), flag.changed for changes through
# attestctl and the org flags API (its documented members, both signatures), retries on a short
# schedule and the delivery log, isActive:false, another organization's key, the SSRF guard of
# attestctl, a SIGKILLed worker losing nothing, and events delivered per second.
set -euo pipefail
cd "$(dirname "$0")/../.."
exec python3 nginx/e2e/webhooks.py
