#!/usr/bin/env bash
# The operator console's edge cases in a real browser (console_edges.py): a stale tab after a
# second sign-in, a damaged sign-in link, a slow API, a 404's headers, and the accessibility
# checker's own blind spots. Needs the release build, Debian's chromium and chromium-driver.
# Ends with "console_edges: N passed, M failed"; exits 1 on a failure.
set -euo pipefail
cd "$(dirname "$0")/../.."
for need in /usr/bin/chromium /usr/bin/chromedriver; do
  [ -x "$need" ] || { echo "console_edges: $need is missing (bash nginx/scripts/deps.sh installs it)"; echo "console_edges: 0 passed, 1 failed"; exit 1; }
done
exec /usr/bin/python3 nginx/e2e/console_edges.py
