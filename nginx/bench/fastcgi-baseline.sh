#!/usr/bin/env bash
# Benchmark: nginx → the trivial FastCGI responder (attest-fcgi-bench --mode trivial) with 1 and
# 2 workers, through the shipped site.conf (challenge location, its rate limit removed).
# Prints requests/s and each worker's resident memory (RSS) idle and under load. It prints
# numbers and never asserts on them; it is not part of the test suite.
#   bash nginx/bench/fastcgi-baseline.sh
#   DURATION=10 THREADS=2 CONNECTIONS=32 WORKERS="1 2" MODES="trivial p256-verify" bash …
set -euo pipefail
cd "$(dirname "$0")/../.."
source nginx/scripts/deps.sh
source nginx/bench/lib.sh

DURATION=${DURATION:-10}
THREADS=${THREADS:-2}
CONNECTIONS=${CONNECTIONS:-32}
WORKERS=${WORKERS:-1 2}
MODES=${MODES:-trivial}

echo "==> release build"
swift build -c release --product attest-fcgi-bench 2>&1 | tail -1
swift build -c release --product attestctl 2>&1 | tail -1  # renders nginx's files (bench_render_nginx)
BIN=$PWD/.build/release/attest-fcgi-bench

DIR=$(mktemp -d /tmp/attestedge-fcgi-bench.XXXXXX)
trap 'bench_cleanup; rm -rf "$DIR"' EXIT
PORT=$(bench_free_port)
BENCH_NO_RATE_LIMIT=1 bench_render_nginx "$DIR" "$PORT"
bench_start_nginx "$DIR"
URL="http://127.0.0.1:$PORT/api/v1/attestation/challenge"

RESULTS=()
for mode in $MODES; do
  for workers in $WORKERS; do
    bench_start_pool POOL "$DIR/logs/pool.log" "$BIN" --mode "$mode" --socket "$DIR/run/challenge.sock" --workers "$workers"
    idle=""
    for w in $(bench_workers "$POOL"); do idle+="$(bench_rss_kib "$w") "; done
    bench_wrk "$URL" "$THREADS" "$CONNECTIONS" 2 > /dev/null   # warm-up
    bench_wrk "$URL" "$THREADS" "$CONNECTIONS" "$DURATION" "$POOL"
    RESULTS+=("$(printf '%-12s %-8s %10s   %-22s %s' "$mode" "$workers" "$BENCH_RPS" "${idle% }" "$BENCH_LOADED_RSS")")
    bench_stop_pool "$POOL" || echo "warning: pool exited with status $?" >&2
  done
done
bench_stop_nginx

echo
echo "nginx -> FastCGI over a unix socket; wrk -t$THREADS -c$CONNECTIONS -d${DURATION}s on $(nproc) cores"
printf '%-12s %-8s %10s   %-22s %s\n' mode workers "req/s" "RSS idle (KiB/worker)" "RSS loaded (KiB/worker)"
printf '%s\n' "${RESULTS[@]}"
