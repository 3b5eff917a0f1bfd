#!/usr/bin/env bash
# Feature flags, the flag stream (nginx + nchan) and What's New through real nginx (issue #41,
# design §3.11): rules on attested properties, the stream read as raw bytes (first event,
# changes within 1 s, keepalive, reload), 401 vs 403, unknown environments, What's New decoded
# like the SDK, hostile queries, a revoked device's open stream closed within
# flags.streamMaxSeconds, a missed publish repaired at connect, the publisher socket out of
# another account's reach, and the fault case (the flags pool unreachable: 500s and no nginx
# worker exits). See flags.py. Needs the release build; run as root (it switches a forked child
# to nobody). Ends with "flags: N passed, M failed"; exits 1 on a failure.
set -euo pipefail
cd "$(dirname "$0")/../.."
exec python3 nginx/e2e/flags.py
