#!/usr/bin/env bash
# Benchmark (issue #10): validate throughput through nginx with the webhook outbox on
# (webhooks.queueEvents=true: device.new and attestation.completed written in validate's
# transaction) and off, in the same run, with the same pre-generated requests' shape
# (attest-device batch; each body succeeds once). Delivery is not running: this is the cost of
# queueing. Events delivered per second to a local receiver are measured by nginx/e2e/webhooks.sh.
# Prints numbers, asserts nothing; not part of the test suite.
#   VALIDATES=3000 WORKERS=2 SYNC=commit bash nginx/bench/webhooks.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
source nginx/scripts/deps.sh
source nginx/bench/lib.sh

VALIDATES=${VALIDATES:-3000}
WORKERS=${WORKERS:-2}
THREADS=${THREADS:-2}
CONNECTIONS=${CONNECTIONS:-16}
SYNC=${SYNC:-commit}
TEAM=BENCH00001 BUNDLE=com.example.bench

swift build -c release 2>&1 | tail -1
BIN=$PWD/.build/release
declare -A RESULT
DIR=""
trap 'bench_cleanup; [ -z "$DIR" ] || rm -rf "$DIR"' EXIT
for outbox in true false; do
  DIR=$(mktemp -d /tmp/attestedge-webhooks-bench.XXXXXX)
  DATA=$DIR/data
  bench_data "$BIN" "$DATA" "$TEAM" "$BUNDLE" "store.sync $SYNC" "webhooks.queueEvents $outbox" "rateLimits.validatePerIPPerMinute 0"
  PORT=$(bench_free_port)
  BENCH_NO_RATE_LIMIT=1 bench_render_nginx "$DIR" "$PORT"
  bench_start_nginx "$DIR"
  BASE="http://127.0.0.1:$PORT"
  for e in challenge validate; do
    bench_start_pool "POOL_$e" "$DIR/logs/$e.log" "$BIN/attest-$e" --socket "$DIR/run/$e.sock" --workers "$WORKERS" --data "$DATA"
  done
  "$BIN/attest-device" --server "$BASE" --team "$TEAM" --bundle "$BUNDLE" --state "$DIR/device.json" --test-ca "$DATA/test-ca/ca.pem" \
    batch validate --count "$VALIDATES" --out "$DIR/validate.jsonl"
  bench_replay "$BASE/api/v1/attestation/validate" "$DIR/validate.jsonl" "$THREADS" "$CONNECTIONS" "$BUNDLE" "$TEAM"
  RESULT[$outbox]=$BENCH_REPLAY_RPS
  queued=$("$BIN/attestctl" store stats --json --data "$DATA" | python3 -c 'import json,sys; print(json.load(sys.stdin)["databases"]["outbox"])')
  echo "webhooks.queueEvents=$outbox: $BENCH_REPLAY_OK ok, $BENCH_REPLAY_FAILED failed, $BENCH_REPLAY_RPS validates/s, $queued events queued"
  bench_cleanup
  rm -rf "$DIR"
  DIR=""
done
echo
echo "validate through nginx, $WORKERS workers, store.sync=$SYNC, wrk -t$THREADS -c$CONNECTIONS, $(nproc) cores"
echo "outbox on: ${RESULT[true]}/s   outbox off: ${RESULT[false]}/s   on ÷ off: $(awk -v a="${RESULT[true]}" -v b="${RESULT[false]}" 'BEGIN { printf "%.2f", a / b }')"
