#!/usr/bin/env bash
# The operator console's organization API through real nginx and the org pool (issue #43): an
# enrolled software device found by search, its page saying refresh would accept it, an
# admin's block with a reason, then the page says why and the device's own refresh is refused
# (403) as it says; API keys created (shown once, no-store), revoked (then 401); apps and the
# flags pool's flag evaluation; another organization's key gets 404 for the device, the app
# and the key; the two paths the main session fills answer 404 JSON. See org.py. Needs the
# release build. Ends with "org: N passed, M failed"; exits 1 on a failure.
set -euo pipefail
cd "$(dirname "$0")/../.."
exec python3 nginx/e2e/org.py
