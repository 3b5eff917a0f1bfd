#!/usr/bin/env bash
# Fault test (issue #12): with store.sync=commit, no refresh answered 200 is lost when every
# process (nginx, the pools) is SIGKILLed under load and the page cache is then dropped — as
# close to a power cut as a shared box allows (root is needed for drop_caches; without it the
# test still runs and says so). Then it simulates the machine restarting (it rewrites the
# store's boot record) and checks that the next open recreates the unsynced ephemeral
# environment and records the challenge cutoff. See durability.py. Needs the release
# build; ~30 s.
set -euo pipefail
cd "$(dirname "$0")/../.."
exec python3 nginx/e2e/durability.py "$@"
