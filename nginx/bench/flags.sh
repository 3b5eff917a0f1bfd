#!/usr/bin/env bash
# Benchmark (issue #41): what a flags read and a What's New list cost, as ratios to the
# heartbeat floor (one device's token, seen before by each worker), measured through nginx in
# the same run, in alternating rounds so both meet the same minute of a machine whose speed
# drifts. Then the flag stream's capacity (nginx/bench/flags_stream.py: idle streams' memory,
# a change's fan-out to STREAMS subscribers).
#   GET /api/v1/flags, production: 10 flags, defaults only (the worker's ready answer);
#   GET /api/v1/flags?environment=rules: 50 flags, each with 5 rules (3 on attested properties,
#     2 on the SDK's headers) that the device does not match, so every rule is evaluated;
#   GET /api/v1/whats-new: 20 published notes, none seen.
# Prints a Markdown section; with OUT=FILE it also replaces the section between the
# <!-- flags-bench --> markers in FILE (appended when absent). Asserts nothing; not a test.
#   bash nginx/bench/flags.sh
#   SYNC=commit WORKERS=2 ROUNDS=4 ROUND_SECONDS=3 CONNECTIONS=32 STREAMS=1000 OUT=BENCHMARKS.md bash nginx/bench/flags.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
source nginx/scripts/deps.sh
source nginx/bench/lib.sh

BIN=$PWD/.build/release
SYNC=${SYNC:-interval}
WORKERS=${WORKERS:-2} THREADS=${THREADS:-2} CONNECTIONS=${CONNECTIONS:-32}
ROUNDS=${ROUNDS:-4} ROUND_SECONDS=${ROUND_SECONDS:-3}
STREAMS=${STREAMS:-1000}
OUT=${OUT:-}
TEAM=BENCH00001 BUNDLE=com.example.bench APP=BENCH00001.com.example.bench
[ -x "$BIN/attest-flags" ] || { echo "flags.sh: build first (swift build -c release)" >&2; exit 1; }

DIR=$(mktemp -d /tmp/attestedge-flags-bench.XXXXXX)
trap 'bench_cleanup; rm -rf "$DIR"' EXIT
DATA=$DIR/data
ctl() { "$BIN/attestctl" "$@" --data "$DATA" > /dev/null; }
bench_data "$BIN" "$DATA" "$TEAM" "$BUNDLE" "store.sync $SYNC" "rateLimits.validatePerIPPerMinute 0" \
  "rateLimits.refreshPerIPPerMinute 0"
PORT=$(bench_free_port)
BENCH_NO_RATE_LIMIT=1 bench_render_nginx "$DIR" "$PORT"
bench_start_nginx "$DIR"
BASE="http://127.0.0.1:$PORT"
for e in challenge validate mad flags; do
  bench_start_pool "POOL_$e" "$DIR/logs/$e.log" "$BIN/attest-$e" --socket "$DIR/run/$e.sock" --workers "$WORKERS" --data "$DATA"
done

echo "==> $ROUNDS rounds of ${ROUND_SECONDS}s per side; $WORKERS workers; store.sync=$SYNC; setting up flags and notes"
for i in $(seq 1 10); do ctl flags add --app "$APP" --key "flag$i" --type bool --value false; done
ctl flags env add --app "$APP" rules
for i in $(seq 11 50); do ctl flags add --app "$APP" --key "flag$i" --type bool --value false --env rules; done
for i in $(seq 1 10); do ctl flags set --app "$APP" --key "flag$i" --value false --env rules; done
for i in $(seq 1 50); do
  ctl flags rule add --app "$APP" --key "flag$i" --env rules --value true --when 'riskScore gte 90'
  ctl flags rule add --app "$APP" --key "flag$i" --env rules --value true --when 'riskCategory eq "high"'
  ctl flags rule add --app "$APP" --key "flag$i" --env rules --value true --when 'attestationCount gt 1000'
  ctl flags rule add --app "$APP" --key "flag$i" --env rules --value true --when 'app_version gte 9.0'
  ctl flags rule add --app "$APP" --key "flag$i" --env rules --value true --when 'custom.plan in ["gold","team"]'
done
for i in $(seq 1 20); do
  ctl notes add --app "$APP" --version "1.$i" --title "Release 1.$i" --body "What changed in 1.$i."
done
# The device's lineage first attests with 1.0, then again (same fingerprint) with 1.20: What's
# New then has all 20 notes for it (1.1 … 1.20).
for v in 1.0 1.20; do
  "$BIN/attest-device" --server "$BASE" --team "$TEAM" --bundle "$BUNDLE" --test-ca "$DATA/test-ca/ca.pem" \
    --state "$DIR/device-$v.json" --fingerprint bench-device --app-version "$v" enroll > /dev/null
done
TOKEN=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["fields"]["token"])' "$DIR/device-1.20.json")
NOTES=$(curl -fsS -H "X-Bundle-ID: $BUNDLE" -H "X-Team-ID: $TEAM" -H "Authorization: Bearer $TOKEN" "$BASE/api/v1/whats-new" \
  | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["releaseNotes"]))')
[ "$NOTES" = 20 ] || { echo "flags.sh: What's New lists $NOTES notes, not 20" >&2; exit 1; }

# One Lua script for both sides: heartbeat is a POST of {}, the others are GETs; the same
# headers (the token and the app's), so only the endpoint differs.
cat > "$DIR/request.lua" <<EOF
wrk.headers["X-Bundle-ID"] = "$BUNDLE"
wrk.headers["X-Team-ID"] = "$TEAM"
wrk.headers["Authorization"] = "Bearer $TOKEN"
wrk.headers["X-App-Version"] = "1.20"
wrk.headers["Content-Type"] = "application/json"
request = function()
  if string.find(wrk.path, "heartbeat", 1, true) then return wrk.format("POST", nil, nil, "{}") end
  return wrk.format("GET")
end
EOF
BENCH_WRK_EXTRA=(-s "$DIR/request.lua" --latency)

# pair NAME URL MASTER: ROUNDS rounds, each the endpoint then heartbeat for ROUND_SECONDS;
# prints a row: both sides' req/s, p99, pool CPU µs per request, and the ratios.
ROWS=()
pair() {
  local name=$1 url=$2 master=$3 i side u m cpu0 n
  local -A reqs=() secs=() ms=() p99s=()
  bench_wrk "$url" "$THREADS" "$CONNECTIONS" 1 > /dev/null
  bench_wrk "$BASE/api/v1/heartbeat" "$THREADS" "$CONNECTIONS" 1 > /dev/null
  for ((i = 0; i < ROUNDS; i++)); do
    for side in ours floor; do
      if [ "$side" = ours ]; then u=$url m=$master; else u=$BASE/api/v1/heartbeat m=$POOL_mad; fi
      cpu0=$(bench_pool_cpu_ms "$m")
      bench_wrk "$u" "$THREADS" "$CONNECTIONS" "$ROUND_SECONDS"
      if grep -q Non-2xx <<< "$BENCH_WRK_OUT"; then echo "error: $u answered non-2xx" >&2; exit 1; fi
      n=$(bench_requests)
      reqs[$side]=$(( ${reqs[$side]:-0} + n )) ms[$side]=$(( ${ms[$side]:-0} + $(bench_pool_cpu_ms "$m") - cpu0 ))
      secs[$side]=$(awk -v a="${secs[$side]:-0}" -v n="$n" -v r="$BENCH_RPS" 'BEGIN { printf "%.6f", a + n / r }')
      p99s[$side]+="$(bench_latency_ms 99 <<< "$BENCH_WRK_OUT") "
    done
  done
  local rps_o rps_f p99_o p99_f us_o us_f
  rps_o=$(awk -v n="${reqs[ours]}" -v t="${secs[ours]}" 'BEGIN { printf "%.0f", n / t }')
  rps_f=$(awk -v n="${reqs[floor]}" -v t="${secs[floor]}" 'BEGIN { printf "%.0f", n / t }')
  p99_o=$(bench_median <<< "${p99s[ours]}") p99_f=$(bench_median <<< "${p99s[floor]}")
  us_o=$(awk -v n="${reqs[ours]}" -v m="${ms[ours]}" 'BEGIN { printf "%.0f", m * 1000 / n }')
  us_f=$(awk -v n="${reqs[floor]}" -v m="${ms[floor]}" 'BEGIN { printf "%.0f", m * 1000 / n }')
  ROWS+=("| $name | $rps_o | $p99_o | $us_o | $rps_f | $p99_f | $us_f | $(awk -v a="$rps_o" -v b="$rps_f" \
    'BEGIN { printf "%.2f", a / b }') | $(awk -v a="$p99_o" -v b="$p99_f" 'BEGIN { printf "%.2f", a / b }') |")
  echo "${ROWS[-1]}"
}
pair "flags, 10 flags, defaults only" "$BASE/api/v1/flags" "$POOL_flags"
pair "flags, 50 flags × 5 rules evaluated" "$BASE/api/v1/flags?environment=rules" "$POOL_flags"
pair "whats-new, 20 notes" "$BASE/api/v1/whats-new" "$POOL_flags"
for e in challenge validate mad flags; do v=POOL_$e; bench_stop_pool "${!v}" || true; done
bench_stop_nginx

echo "==> flag stream: $STREAMS idle streams (nginx/bench/flags_stream.py)"
STREAM_OUT=$(python3 nginx/bench/flags_stream.py "$STREAMS" 2>&1 | tail -n 12)
echo "$STREAM_OUT"

SECTION=$(
  echo "<!-- flags-bench -->"
  echo "## Flags and What's New against the heartbeat floor ($SYNC, $WORKERS workers, $CONNECTIONS clients)"
  echo
  echo "\`nginx/bench/flags.sh\` ($(date -u +%Y-%m-%d), $(git rev-parse --short HEAD)): one device's token, seen"
  echo "before by each worker, on every side; $ROUNDS rounds of ${ROUND_SECONDS} s, the endpoint then heartbeat"
  echo "(POST, no monthly write: the device is already counted today). p99 is the median of the rounds' p99s"
  echo "(one round's p99 on this shared machine can be a stall of hundreds of milliseconds on either side)."
  echo
  echo "| endpoint | req/s | p99 ms | pool µs/req | heartbeat req/s | heartbeat p99 ms | heartbeat µs/req | req/s ÷ heartbeat | p99 ÷ heartbeat |"
  echo "|---|---|---|---|---|---|---|---|---|"
  printf '%s\n' "${ROWS[@]}"
  echo
  echo "The stream, \`nginx/bench/flags_stream.py $STREAMS\` (\`attestctl serve\`, nginx + nchan):"
  echo
  echo '```'
  echo "$STREAM_OUT"
  echo '```'
  echo "<!-- /flags-bench -->"
)
echo "$SECTION"
if [ -n "$OUT" ]; then
  python3 - "$OUT" "$SECTION" <<'EOF'
import re, sys
path, section = sys.argv[1], sys.argv[2]
try:
    text = open(path).read()
except FileNotFoundError:
    text = ""
pattern = re.compile(r"<!-- flags-bench -->.*?<!-- /flags-bench -->", re.S)
text = pattern.sub(lambda _: section, text) if pattern.search(text) else text.rstrip("\n") + "\n\n" + section + "\n"
open(path, "w").write(text)
EOF
  echo "==> wrote the flags section of $OUT"
fi
