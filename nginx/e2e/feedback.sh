#!/usr/bin/env bash
# Feature requests and support tickets through real nginx and the feedback pool (issue #42):
# software devices create, vote (a second vote 409), comment and open tickets; the admin
# replies, changes statuses and merges with `attestctl feedback|tickets`; every answer decoded
# by strict mirrors of the SDK's models (an item that would not decode fails); a ticket hidden
# from another device sending the same submitter_id (404 / []), read by a device linked to the
# same subject by a signed link and not by one that only asserts it; the six feedback and
# ticket webhook events delivered and verified with the standardwebhooks package. See
# feedback.py. Needs the release build. Ends with "feedback: N passed, M failed"; exits 1 on a
# failure.
set -euo pipefail
cd "$(dirname "$0")/../.."
exec python3 nginx/e2e/feedback.py
