#!/usr/bin/env bash
# Two hosts on one PostgreSQL database (issue #14): two full stacks (their own data
# directories, nginx and pools) sharing the challenge secret, signing keys and the database;
# cross-host refresh, one challenge raced on both hosts, one counter split across them, the MAD
# limit raced across them, webhooks once per event with a delivery worker on each, feature flags
# (a change on A: A's stream within 1 s, B's stream at its reconnect, B's GET within 2 s,
# flag.changed once), and host A
# SIGKILLed under refresh load losing no acknowledged counter. Uses ATTEST_TEST_POSTGRES_URL,
# else starts its own cluster (nginx/scripts/postgres.sh). Needs the release build; ~1 min.
set -euo pipefail
cd "$(dirname "$0")/../.."
exec python3 nginx/e2e/hosts.py "$@"
