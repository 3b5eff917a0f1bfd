#!/usr/bin/env bash
# The operator console in a real browser (issue #43): headless Chromium (Debian's chromium and
# chromium-driver, through Debian's python3-selenium: /usr/bin/python3, not a pyenv python3
# without it) against `attestctl serve`, signed in with `attestctl console login`'s one-time
# URL: the usage numbers against the API, a device found and blocked (its next refresh 403), a
# boolean flag flipped (the device's next flags call shows it), a ticket answered (the device
# reads it), the refusals (no cookie, no CSRF token, a viewer's change, another organization,
# a used URL, a logout), screenshots of every page at 1280×900 and 390×844, and an
# accessibility pass per page. See console.py. Needs the release build. Ends with
# "console: N passed, M failed"; exits 1 on a failure.
set -euo pipefail
cd "$(dirname "$0")/../.."
for need in /usr/bin/chromium /usr/bin/chromedriver; do
  [ -x "$need" ] || { echo "console: $need is missing (bash nginx/scripts/deps.sh installs it)"; echo "console: 0 passed, 1 failed"; exit 1; }
done
exec /usr/bin/python3 nginx/e2e/console.py
