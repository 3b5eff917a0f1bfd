#!/usr/bin/env bash
# Benchmark (issue: monthly-active-device accounting): what counting costs refresh, and how
# monthly counting and the report scale.
#   1. refresh through nginx (interval sync, pre-generated bodies replayed once each) with this
#      build and with BASE_REV (default: the commit before counting), alternating rounds in
#      the same run; prints refresh/s of each and the ratio.
#   2. attest-bench usage: N synthetic devices counted for this month through the real
#      admission code, then the time of 'attestctl usage' over that month.
# Prints numbers, asserts nothing; not part of the test suite.
#   bash nginx/bench/usage.sh
#   BASE_REV=<commit> HEAD_REV=<commit> ROUNDS=2 REFRESHES=20000 DEVICES=2000 USAGE_DEVICES=1000000 bash …
# The figure in the notes compares the counting commits with their parent:
#   HEAD_REV=6982317 BASE_REV=3a0f780 ROUNDS=3 bash nginx/bench/usage.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
source nginx/scripts/deps.sh
source nginx/bench/lib.sh

BASE_REV=${BASE_REV:-3a0f78091bb149f4c6f5abed7c5bb76be225f8f0}
ROUNDS=${ROUNDS:-2}
REFRESHES=${REFRESHES:-20000}
DEVICES=${DEVICES:-2000}
USAGE_DEVICES=${USAGE_DEVICES:-1000000}
WORKERS=${WORKERS:-2} THREADS=${THREADS:-2} CONNECTIONS=${CONNECTIONS:-16}
TEAM=BENCH00001 BUNDLE=com.example.bench

# worktree_build REV DIR: a release build of REV in a detached worktree at DIR (kept for reuse).
worktree_build() {
  local rev=$1 dir=$2
  if [ "$(git -C "$dir" rev-parse HEAD 2>/dev/null)" != "$(git rev-parse "$rev")" ]; then
    git worktree remove --force "$dir" 2>/dev/null || rm -rf "$dir"
    git worktree add --detach "$dir" "$rev" > /dev/null
  fi
  echo "==> release build of $rev in $dir (slow the first time)"
  (cd "$dir" && swift build -c release 2>&1 | tail -1)
}
if [ -n "${HEAD_REV:-}" ]; then
  # Compare two commits (e.g. the one that added counting and its parent), not this checkout.
  worktree_build "$HEAD_REV" /tmp/attestedge-head
  HEAD_BIN=/tmp/attestedge-head/.build/release
else
  echo "==> release build of this checkout"
  swift build -c release 2>&1 | tail -1
  HEAD_BIN=$PWD/.build/release
fi
worktree_build "$BASE_REV" /tmp/attestedge-base
BASE_BIN=/tmp/attestedge-base/.build/release

DIR=""
trap 'bench_cleanup; [ -z "$DIR" ] || rm -rf "$DIR"' EXIT

# refresh_round BIN: a fresh data directory and pools from BIN; sets ROUND_RPS.
refresh_round() {
  local bin=$1
  DIR=$(mktemp -d /tmp/attestedge-usage-bench.XXXXXX)
  local data=$DIR/data
  "$bin/attestctl" init --data "$data" --test-ca > /dev/null
  "$bin/attestctl" config set store.sync interval --data "$data" > /dev/null
  "$bin/attestctl" config set rateLimits.validatePerIPPerMinute 0 --data "$data" > /dev/null
  "$bin/attestctl" config set rateLimits.refreshPerIPPerMinute 0 --data "$data" > /dev/null 2>&1 || true
  "$bin/attestctl" org add bench --tier enterprise --data "$data" > /dev/null
  "$bin/attestctl" app add --org bench --team "$TEAM" --bundle "$BUNDLE" --data "$data" > /dev/null
  local port
  port=$(bench_free_port)
  BENCH_NO_RATE_LIMIT=1 bench_render_nginx "$DIR" "$port"
  bench_start_nginx "$DIR"
  local base="http://127.0.0.1:$port" e
  for e in challenge validate refresh; do
    bench_start_pool "POOL_$e" "$DIR/logs/$e.log" "$bin/attest-$e" --socket "$DIR/run/$e.sock" --workers "$WORKERS" --data "$data"
  done
  "$bin/attest-device" --server "$base" --team "$TEAM" --bundle "$BUNDLE" --state "$DIR/device.json" --test-ca "$data/test-ca/ca.pem" \
    batch refresh --count "$REFRESHES" --devices "$DEVICES" --out "$DIR/refresh.jsonl" > /dev/null
  bench_replay "$base/api/v1/attestation/refresh" "$DIR/refresh.jsonl" "$THREADS" "$CONNECTIONS" "$BUNDLE" "$TEAM"
  ROUND_RPS=$BENCH_REPLAY_RPS
  echo "    $BENCH_REPLAY_OK ok, $BENCH_REPLAY_FAILED failed, $BENCH_REPLAY_LOST lost in wrk: $ROUND_RPS/s"
  bench_cleanup
  rm -rf "$DIR"
  DIR=""
}

declare -a HEAD_RPS BASE_RPS
for round in $(seq 1 "$ROUNDS"); do
  echo "==> round $round: refresh without counting ($BASE_REV)"
  refresh_round "$BASE_BIN"; BASE_RPS+=("$ROUND_RPS")
  echo "==> round $round: refresh with counting (this build)"
  refresh_round "$HEAD_BIN"; HEAD_RPS+=("$ROUND_RPS")
done

echo "==> counting $USAGE_DEVICES devices for one month (attest-bench usage)"
DIR=$(mktemp -d /tmp/attestedge-usage-bench.XXXXXX)
"$HEAD_BIN/attestctl" init --data "$DIR/data" > /dev/null
"$HEAD_BIN/attest-bench" usage --devices "$USAGE_DEVICES" --data "$DIR/data" 2> /dev/null
START=$(date +%s.%N)
"$HEAD_BIN/attestctl" usage --org bench-usage --data "$DIR/data" > /dev/null
END=$(date +%s.%N)
USAGE_MS=$(awk -v a="$START" -v b="$END" 'BEGIN { printf "%.1f", (b - a) * 1000 }')

echo
echo "refresh through nginx, $WORKERS workers, wrk -t$THREADS -c$CONNECTIONS, $REFRESHES bodies over $DEVICES devices, store.sync=interval, $(nproc) cores"
printf '%-6s %16s %16s %8s\n' round "without/s" "with counting/s" ratio
for i in "${!HEAD_RPS[@]}"; do
  printf '%-6s %16s %16s %8s\n' "$((i + 1))" "${BASE_RPS[$i]}" "${HEAD_RPS[$i]}" \
    "$(awk -v a="${HEAD_RPS[$i]}" -v b="${BASE_RPS[$i]}" 'BEGIN { printf "%.2f", a / b }')"
done
echo "attestctl usage over a month of $USAGE_DEVICES counted devices: $USAGE_MS ms (whole process)"
