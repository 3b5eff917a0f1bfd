#!/usr/bin/env bash
# Benchmark (issue: validate, refresh, tokens): validate and refresh through nginx with
# pre-generated requests (attest-device batch; each body carries its own fresh challenge and
# succeeds once), for both store.sync settings, next to baselines measured in the same run:
#   refresh  ÷ a FastCGI handler doing one P-256 verify per request, through the same nginx
#              location with the same worker count                                (aim >= 0.6)
#   validate ÷ (raw OpenSSL P-384 verify rate on one core × worker count)         (aim >= 0.6)
# Prints numbers, asserts nothing; not part of the test suite.
#   bash nginx/bench/device.sh
#   VALIDATES=3000 REFRESHES=20000 DEVICES=2000 WORKERS=2 SYNCS="commit interval" bash …
# SYNCS may also name `postgres`: the same run with store.backend=postgres, in a fresh schema
# of $POSTGRES_URL, or of a throwaway cluster started for the run (nginx/scripts/postgres.sh):
#   SYNCS="commit postgres" bash nginx/bench/device.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
source nginx/scripts/deps.sh
source nginx/bench/lib.sh

VALIDATES=${VALIDATES:-3000}
REFRESHES=${REFRESHES:-20000}
DEVICES=${DEVICES:-2000}
WORKERS=${WORKERS:-2}
THREADS=${THREADS:-2}
CONNECTIONS=${CONNECTIONS:-16}
SYNCS=${SYNCS:-commit interval}
SYNC_INTERVAL_MS=${SYNC_INTERVAL_MS:-}
TEAM=BENCH00001 BUNDLE=com.example.bench

echo "==> release build"
# BIN: another build's executables (comparing two builds in one sitting).
if [ -z "${BIN:-}" ]; then swift build -c release 2>&1 | tail -1; fi
BIN=${BIN:-$PWD/.build/release}

echo "==> raw OpenSSL rates on one core (attest-bench verify)"
RAW=$("$BIN/attest-bench" verify --seconds 2 --json)
RAW_P384=$(python3 -c 'import json,sys; print(next(r["rawRate"] for r in json.load(sys.stdin)["results"] if r["rawCurve"] == "P-384"))' <<< "$RAW")
echo "raw P-384 verify: $RAW_P384/s per core"

declare -A RESULT
DIR=""
trap 'bench_cleanup; bench_postgres_stop; [ -z "$DIR" ] || rm -rf "$DIR"' EXIT
if [[ " $SYNCS " == *" postgres "* ]]; then bench_postgres_start; fi
for sync in $SYNCS; do
  DIR=$(mktemp -d /tmp/attestedge-device-bench.XXXXXX)
  DATA=$DIR/data
  "$BIN/attestctl" init --data "$DATA" --test-ca > /dev/null
  if [ "$sync" = postgres ]; then
    bench_use_postgres "$BIN" "$DATA"
  else
    "$BIN/attestctl" config set store.sync "$sync" --data "$DATA" > /dev/null
  fi
  [ -z "$SYNC_INTERVAL_MS" ] || "$BIN/attestctl" config set store.syncIntervalMs "$SYNC_INTERVAL_MS" --data "$DATA" > /dev/null
  "$BIN/attestctl" config set rateLimits.validatePerIPPerMinute 0 --data "$DATA" > /dev/null
  "$BIN/attestctl" config set rateLimits.refreshPerIPPerMinute 0 --data "$DATA" > /dev/null
  "$BIN/attestctl" org add bench --tier enterprise --data "$DATA" > /dev/null
  "$BIN/attestctl" app add --org bench --team "$TEAM" --bundle "$BUNDLE" --data "$DATA" > /dev/null
  PORT=$(bench_free_port)
  BENCH_NO_RATE_LIMIT=1 bench_render_nginx "$DIR" "$PORT"
  bench_start_nginx "$DIR"
  BASE="http://127.0.0.1:$PORT"
  for e in challenge validate refresh; do
    bench_start_pool "POOL_$e" "$DIR/logs/$e.log" "$BIN/attest-$e" --socket "$DIR/run/$e.sock" --workers "$WORKERS" --data "$DATA"
  done
  DEV=("$BIN/attest-device" --server "$BASE" --team "$TEAM" --bundle "$BUNDLE" --state "$DIR/device.json" --test-ca "$DATA/test-ca/ca.pem")
  echo "==> store.sync=$sync: generating $VALIDATES validate bodies, $DEVICES devices with $REFRESHES refresh bodies"
  "${DEV[@]}" batch validate --count "$VALIDATES" --out "$DIR/validate.jsonl"
  "${DEV[@]}" batch refresh --count "$REFRESHES" --devices "$DEVICES" --out "$DIR/refresh.jsonl"

  bench_replay "$BASE/api/v1/attestation/validate" "$DIR/validate.jsonl" "$THREADS" "$CONNECTIONS" "$BUNDLE" "$TEAM"
  RESULT[$sync,validate]=$BENCH_REPLAY_RPS
  echo "validate: $BENCH_REPLAY_OK ok, $BENCH_REPLAY_FAILED failed, $BENCH_REPLAY_LOST lost in wrk, $BENCH_REPLAY_RPS/s"
  bench_replay "$BASE/api/v1/attestation/refresh" "$DIR/refresh.jsonl" "$THREADS" "$CONNECTIONS" "$BUNDLE" "$TEAM"
  RESULT[$sync,refresh]=$BENCH_REPLAY_RPS
  echo "refresh:  $BENCH_REPLAY_OK ok, $BENCH_REPLAY_FAILED failed, $BENCH_REPLAY_LOST lost in wrk, $BENCH_REPLAY_RPS/s"

  # Baseline in the same run: one P-256 verify per request behind the refresh location.
  bench_stop_pool "$POOL_refresh" || true
  bench_start_pool VERIFY "$DIR/logs/verify.log" "$BIN/attest-fcgi-bench" --mode p256-verify --socket "$DIR/run/refresh.sock" --workers "$WORKERS"
  bench_wrk "$BASE/api/v1/attestation/refresh" "$THREADS" "$CONNECTIONS" 1 > /dev/null
  bench_wrk "$BASE/api/v1/attestation/refresh" "$THREADS" "$CONNECTIONS" 5
  RESULT[$sync,verify]=$BENCH_RPS
  echo "p256-verify handler: $BENCH_RPS/s"
  bench_cleanup
  rm -rf "$DIR"
  DIR=""
done

echo
echo "nginx → $WORKERS workers per pool, wrk -t$THREADS -c$CONNECTIONS, $(nproc) cores; raw P-384 $RAW_P384/s/core"
printf '%-10s %12s %12s %14s %12s %16s\n' store "refresh/s" "verify-hdl/s" "refresh ratio" "validate/s" "validate ratio"
for sync in $SYNCS; do
  r=${RESULT[$sync,refresh]} v=${RESULT[$sync,verify]} a=${RESULT[$sync,validate]}
  printf '%-10s %12s %12s %14s %12s %16s\n' "$sync" "$r" "$v" "$(awk -v a="$r" -v b="$v" 'BEGIN { printf "%.2f", a / b }')" \
    "$a" "$(awk -v a="$a" -v b="$RAW_P384" -v w="$WORKERS" 'BEGIN { printf "%.2f", a / (b * w) }')"
done
echo "(aims: refresh ratio >= 0.6, validate ratio >= 0.6)"
