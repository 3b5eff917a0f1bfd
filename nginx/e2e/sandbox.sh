#!/usr/bin/env bash
# Webhook registration under the systemd units' network sandbox (issue 37 item 10): the
# webhooks pool runs with PrivateNetwork=yes and RestrictAddressFamilies=AF_UNIX (emulated
# with `unshare --net` and a seccomp filter where systemd is not PID 1), a URL with a host name
# registers there, and the delivery worker (outside it, as attestedge-deliver.service) still
# refuses a name that resolves to a forbidden address at connection time. Needs root (unshare)
# and the release build.
set -euo pipefail
cd "$(dirname "$0")/../.."
exec python3 nginx/e2e/sandbox.py
