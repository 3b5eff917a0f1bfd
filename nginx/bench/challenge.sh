#!/usr/bin/env bash
# Benchmark (issue: runtime and challenge): GET /api/v1/attestation/challenge through nginx
# served by attest-challenge (app-bound: each request reads the app from LMDB and MACs a new
# challenge), and in the same run the trivial FastCGI handler on the same socket. Rounds
# alternate the two so machine noise hits both; prints each round, the median ratio
# (aim >= 0.9) and resident memory per worker idle and under load. Prints numbers, asserts
# nothing; not part of the test suite.
#   bash nginx/bench/challenge.sh
#   DURATION=8 ROUNDS=3 WORKERS=2 THREADS=2 CONNECTIONS=32 bash nginx/bench/challenge.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
source nginx/scripts/deps.sh
source nginx/bench/lib.sh

DURATION=${DURATION:-8}
ROUNDS=${ROUNDS:-3}
WORKERS=${WORKERS:-2}
THREADS=${THREADS:-2}
CONNECTIONS=${CONNECTIONS:-32}

echo "==> release build"
swift build -c release 2>&1 | tail -1
BIN=$PWD/.build/release

DIR=$(mktemp -d /tmp/attestedge-challenge-bench.XXXXXX)
trap 'bench_cleanup; rm -rf "$DIR"' EXIT
DATA=$DIR/data
"$BIN/attestctl" init --data "$DATA" > /dev/null
"$BIN/attestctl" org add bench --tier enterprise --data "$DATA" > /dev/null
"$BIN/attestctl" app add --org bench --team BENCH00001 --bundle com.example.bench --data "$DATA" > /dev/null
PORT=$(bench_free_port)
BENCH_NO_RATE_LIMIT=1 bench_render_nginx "$DIR" "$PORT"
bench_start_nginx "$DIR"
URL="http://127.0.0.1:$PORT/api/v1/attestation/challenge"
BENCH_WRK_EXTRA=(-H "X-Bundle-ID: com.example.bench" -H "X-Team-ID: BENCH00001")
SOCK=$DIR/run/challenge.sock

measure() { # measure NAME CMD… → sets RPS, IDLE, LOADED
  local name=$1; shift
  bench_start_pool POOL "$DIR/logs/$name.log" "$@"
  IDLE=""
  for w in $(bench_workers "$POOL"); do IDLE+="$(bench_rss_kib "$w") "; done
  bench_wrk "$URL" "$THREADS" "$CONNECTIONS" 1 > /dev/null   # warm-up
  local cpu0
  cpu0=$(bench_pool_cpu_ms "$POOL")
  bench_wrk "$URL" "$THREADS" "$CONNECTIONS" "$DURATION" "$POOL"
  US_PER_REQ=$(awk -v ms="$(( $(bench_pool_cpu_ms "$POOL") - cpu0 ))" -v n="$(bench_requests)" 'BEGIN { printf "%.1f", ms * 1000 / n }')
  if grep -q "Non-2xx" <<< "$BENCH_WRK_OUT"; then echo "error: $name answered non-2xx: $(grep Non-2xx <<< "$BENCH_WRK_OUT")" >&2; exit 1; fi
  RPS=$BENCH_RPS
  LOADED=$BENCH_LOADED_RSS
  bench_stop_pool "$POOL" || true
}

ratios=() cpu_trivial=() cpu_challenge=()
echo "==> $ROUNDS rounds of ${DURATION}s each, $WORKERS workers, wrk -t$THREADS -c$CONNECTIONS"
for round in $(seq 1 "$ROUNDS"); do
  measure trivial "$BIN/attest-fcgi-bench" --mode trivial --socket "$SOCK" --workers "$WORKERS"
  trivial=$RPS trivial_idle=$IDLE trivial_loaded=$LOADED trivial_us=$US_PER_REQ
  measure challenge "$BIN/attest-challenge" --socket "$SOCK" --workers "$WORKERS" --data "$DATA"
  ratio=$(awk -v a="$RPS" -v b="$trivial" 'BEGIN { printf "%.3f", a / b }')
  ratios+=("$ratio")
  cpu_trivial+=("$trivial_us") cpu_challenge+=("$US_PER_REQ")
  printf 'round %d: trivial %9s req/s (%5s us CPU/req in the pool)   challenge %9s req/s (%5s us)   ratio %s\n' \
    "$round" "$trivial" "$trivial_us" "$RPS" "$US_PER_REQ" "$ratio"
done
med() { printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
echo
echo "challenge ÷ trivial FastCGI handler, throughput (median of $ROUNDS): $(med "${ratios[@]}")   (aim >= 0.9)"
echo "pool CPU per request (median): trivial $(med "${cpu_trivial[@]}") us, challenge $(med "${cpu_challenge[@]}") us"
echo "RSS per worker, KiB:  trivial idle [$trivial_idle] loaded [$trivial_loaded]   challenge idle [$IDLE] loaded [$LOADED]"
