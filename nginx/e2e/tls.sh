#!/usr/bin/env bash
# HTTPS end to end (issue 39, item 1): attestctl serve --tls-cert/--tls-key with a server
# certificate from a test CA made with openssl; a software device enrolls and refreshes over
# https; HTTP/2, HSTS on answers and on nginx's own JSON errors, TLS 1.0/1.1 refused; Debian's
# testssl.sh against it, failing on any MEDIUM or worse finding. See tls.py.
# Needs the release build. Ends with "tls: N passed, M failed"; exits 1 on a failure.
set -euo pipefail
cd "$(dirname "$0")/../.."
exec python3 nginx/e2e/tls.py
