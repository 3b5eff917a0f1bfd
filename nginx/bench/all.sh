#!/usr/bin/env bash
# One run of every benchmark (issue #12), written to BENCHMARKS.md at the top of the checkout:
#   - the machine's floors: OpenSSL P-256/P-384 verify rates and our in-process verifiers
#     (attest-bench verify), one refresh in-process with keys warm and cold (attest-bench
#     refresh), LMDB durable and no-sync puts (attest-bench store puts),
#     nginx → trivial FastCGI handler and → one-P-256-verify handler at each worker count,
#     and one-verify handlers (P-384, P-256) under the validate and refresh replays, each
#     interleaved with the endpoint's own replay chunk by chunk (replay_pairs), and the trivial
#     handler under challenge GETs, interleaved round by round (wrk_pairs);
#   - the peer: pyattest (PyPI) verifying Apple's guide sample on one core (pyattest_peer.py);
#   - through nginx with wrk and pre-generated attest-device bodies, for each store (LMDB with
#     store.sync commit and interval; PostgreSQL, a throwaway cluster or $POSTGRES_URL) and
#     worker count: challenge (GET, wrk rounds), validate and refresh (each body replayed once),
#     heartbeat (one device's token, wrk -d: signature checked once per worker, then with
#     server.tokenCacheEntries 0: on every heartbeat); throughput, p50/p99, pool CPU µs per request;
#   - refresh at 2 workers again with the default per-IP rate limit (interval, PostgreSQL), the
#     bodies spread over LIMITED_CLIENTS client addresses;
#   - scaling: validate and refresh against stores preloaded with N devices (bench store load);
#   - where a refresh's cost goes: nginx/bench/ablate.sh for each store.sync in ABLATIONS;
#   - flags and What's New against heartbeat, and the flag stream (nginx/bench/flags.sh; FLAGS_BENCH=0 skips it).
# Ratios are against floors measured in this run. Not part of the test suite (minutes).
#   bash nginx/bench/all.sh
#   WORKERS_LIST="1 2 4" SYNCS="commit interval" SCALES="10000 100000 1000000" DURATION=5 \
#   VALIDATES=1500 REFRESHES=8000 DEVICES=1000 CONNECTIONS=64 LOW_CONNECTIONS=16 OUT=BENCHMARKS.md bash nginx/bench/all.sh
#   SCALES="" skips the scaling part; SYNCS="commit interval" skips PostgreSQL; ABLATIONS="" skips ablate.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
ATTEST_NEED_PYATTEST=1 source nginx/scripts/deps.sh
source nginx/bench/lib.sh

WORKERS_LIST=${WORKERS_LIST:-1 2 4}
SYNCS=${SYNCS-commit interval postgres}
SCALES=${SCALES-10000 100000 1000000}
ABLATIONS=${ABLATIONS-interval commit}
SCALE_WORKERS=${SCALE_WORKERS:-2}
SCALE_SYNC=${SCALE_SYNC:-interval}
DURATION=${DURATION:-5}
VALIDATES=${VALIDATES:-1500}
REFRESHES=${REFRESHES:-8000}
DEVICES=${DEVICES:-1000}
PAIRS=${PAIRS:-4}
THREADS=${THREADS:-2}
# Concurrent clients (wrk connections) for every figure: 64 load the box. With 16, commit mode's
# groups were bounded by the clients (held answers wait for a sync while the others are already
# held), so workers waited on syncs with a third of the box idle: a measure of latency, not of
# the machine's limit. LOW_CONNECTIONS ("" skips it) repeats refresh at 2 workers on LMDB with
# that many, interleaved with its floor at the same count, to show what concurrency does.
CONNECTIONS=${CONNECTIONS:-64}
LOW_CONNECTIONS=${LOW_CONNECTIONS-16}
# LIMITED_CLIENTS ("" skips it): refresh at 2 workers again, in interval mode and on PostgreSQL,
# with the per-IP limit a new data directory gets (every deployment pays its bucket; the rows
# above turn rate limits off), the bodies spread over that many client addresses.
LIMITED_CLIENTS=${LIMITED_CLIENTS-1000}
# LIMITED_ORG_RATE=N also gives the organization a limit of N requests per minute for that pass
# (attestctl org set --rate-limit): one bucket every request charges. Unset: no org limit.
LIMITED_ORG_RATE=${LIMITED_ORG_RATE:-}
OUT=${OUT:-BENCHMARKS.md}
TEAM=BENCH00001 BUNDLE=com.example.bench
VECTOR=Tests/AttestCoreTests/Vectors/apple-guide-2026.json

echo "==> release build"
swift build -c release 2>&1 | tail -1
BIN=$PWD/.build/release
STARTED=$(date -u +%Y-%m-%dT%H:%M:%SZ)
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
# CPU time the hypervisor gave to others (/proc/stat "steal") and total, in ticks: on a shared
# VM this is why the same floor can differ between minutes of one run.
cpu_ticks() { awk '/^cpu / { t = 0; for (i = 2; i <= NF; i++) t += $i; print $9, t }' /proc/stat; }
read -r STEAL0 TOTAL0 < <(cpu_ticks)
ROWS=() FLOOR_ROWS=() REPLAY_ROWS=() SCALE_ROWS=() CONC_ROWS=() LIMITED_ROWS=() LOST_NOTES=()
# median (bench_median) / highest of the space-separated numbers on stdin.
median() { bench_median; }
highest() { tr ' ' '\n' | grep . | sort -g | tail -1; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 == 0 || a == "n/a") print "n/a"; else printf "%.2f", a / b }'; }
json() { python3 -c "import json,sys; d=json.load(sys.stdin); print(next(r['$2'] for r in d['results'] if $1))"; }

echo "==> floors: OpenSSL and in-process verifiers (one core), LMDB puts, pyattest"
VERIFY=$(taskset -c 0 "$BIN/attest-bench" verify --seconds 2 --json)
RAW_P384=$(json 'r["rawCurve"] == "P-384"' rawRate <<< "$VERIFY")
RAW_P256=$(json 'r["rawCurve"] == "P-256"' rawRate <<< "$VERIFY")
ATTEST_RATE=$(json 'r["rawCurve"] == "P-384"' rate <<< "$VERIFY")
ATTEST_RATIO=$(json 'r["rawCurve"] == "P-384"' ratio <<< "$VERIFY")
ASSERT_RATE=$(json 'r["rawCurve"] == "P-256"' rate <<< "$VERIFY")
ASSERT_RATIO=$(json 'r["rawCurve"] == "P-256"' ratio <<< "$VERIFY")
PUTS=$("$BIN/attest-bench" store puts --seconds 2 --dir "${TMPDIR:-/tmp}")
DURABLE_PUTS=$(sed 's/.*durable_puts_per_s=\([0-9]*\).*/\1/' <<< "$PUTS")
NOSYNC_PUTS=$(sed 's/.*nosync_puts_per_s=\([0-9]*\).*/\1/' <<< "$PUTS")
PEER=$(taskset -c 0 python3 nginx/bench/pyattest_peer.py "$VECTOR" 3 | sed 's/.*pyattest_per_s=\([0-9.]*\).*/\1/')
# One refresh in-process (no nginx, no FastCGI): keys warm, and cold (a key per refresh).
field() { sed "s/.*$1=\([0-9.]*\).*/\1/"; }
INPROC_WARM=$(taskset -c 0 "$BIN/attest-bench" refresh --devices 200 --count 4000 2>/dev/null)
INPROC_COLD=$(taskset -c 0 "$BIN/attest-bench" refresh --devices 2000 --cold 2>/dev/null)
echo "raw P-256 $RAW_P256/s, P-384 $RAW_P384/s; attestation $ATTEST_RATE/s, assertion $ASSERT_RATE/s; puts $PUTS; pyattest $PEER/s"
echo "in-process refresh: warm $INPROC_WARM; cold $INPROC_COLD"

DIR=$(mktemp -d /tmp/attestedge-all-bench.XXXXXX)
trap 'bench_cleanup; bench_postgres_stop; rm -rf "$DIR"' EXIT
if [[ " $SYNCS " == *" postgres "* ]]; then bench_postgres_start; fi
PORT=$(bench_free_port)
BENCH_NO_RATE_LIMIT=1 BENCH_FLOOR_LOCATIONS=1 BENCH_CLIENT_ADDRESSES=1 bench_render_nginx "$DIR" "$PORT"
bench_start_nginx "$DIR"
BASE="http://127.0.0.1:$PORT"

# wrk_measure NAME URL MASTER: wrk -d DURATION (after 1 s of warm-up); sets M_RPS M_P50 M_P99 M_US.
wrk_measure() {
  local url=$2 master=$3 cpu0
  bench_wrk "$url" "$THREADS" "$CONNECTIONS" 1 > /dev/null
  cpu0=$(bench_pool_cpu_ms "$master")
  BENCH_WRK_EXTRA+=(--latency)
  bench_wrk "$url" "$THREADS" "$CONNECTIONS" "$DURATION"
  unset 'BENCH_WRK_EXTRA[${#BENCH_WRK_EXTRA[@]}-1]'
  M_RPS=$BENCH_RPS
  M_P50=$(bench_latency_ms 50 <<< "$BENCH_WRK_OUT") M_P99=$(bench_latency_ms 99 <<< "$BENCH_WRK_OUT")
  M_US=$(awk -v ms="$(( $(bench_pool_cpu_ms "$master") - cpu0 ))" -v n="$(bench_requests)" 'BEGIN { printf "%.0f", ms * 1000 / n }')
  if grep -q Non-2xx <<< "$BENCH_WRK_OUT"; then echo "error: $1 answered non-2xx" >&2; exit 1; fi
}

# wrk_pairs URL MASTER FLOOR_URL FLOOR_MASTER: after 1 s of warm-up each, PAIRS rounds of wrk
# for DURATION ÷ PAIRS seconds (at least 1) against the endpoint, then against its floor handler,
# so both meet the same minute of the machine. Sets M_* for the endpoint and F_* for the floor
# over all rounds (req/s = requests ÷ seconds, p50 the rounds' median, p99 their highest, pool
# CPU µs per request), and PAIR_MEDIAN, PAIR_MIN, PAIR_MAX: the rounds' floor µs ÷ endpoint µs.
wrk_pairs() {
  local chunk=$(( (DURATION + PAIRS - 1) / PAIRS )) i side url master cpu0 n cpu
  local -A reqs=() secs=() ms=() p50s=() p99s=()
  local ratios=() us=()
  bench_wrk "$1" "$THREADS" "$CONNECTIONS" 1 > /dev/null
  bench_wrk "$3" "$THREADS" "$CONNECTIONS" 1 > /dev/null
  BENCH_WRK_EXTRA+=(--latency)
  for ((i = 0; i < PAIRS; i++)); do
    us=()
    for side in ours floor; do
      if [ "$side" = ours ]; then url=$1 master=$2; else url=$3 master=$4; fi
      cpu0=$(bench_pool_cpu_ms "$master")
      bench_wrk "$url" "$THREADS" "$CONNECTIONS" "$chunk"
      if grep -q Non-2xx <<< "$BENCH_WRK_OUT"; then echo "error: $url answered non-2xx" >&2; exit 1; fi
      n=$(bench_requests) cpu=$(( $(bench_pool_cpu_ms "$master") - cpu0 ))
      reqs[$side]=$(( ${reqs[$side]:-0} + n )) ms[$side]=$(( ${ms[$side]:-0} + cpu ))
      secs[$side]=$(awk -v a="${secs[$side]:-0}" -v n="$n" -v r="$BENCH_RPS" 'BEGIN { printf "%.6f", a + n / r }')
      p50s[$side]+="$(bench_latency_ms 50 <<< "$BENCH_WRK_OUT") " p99s[$side]+="$(bench_latency_ms 99 <<< "$BENCH_WRK_OUT") "
      us+=("$(awk -v ms="$cpu" -v n="$n" 'BEGIN { printf "%.4f", ms * 1000 / n }')")
    done
    ratios+=("$(awk -v f="${us[1]}" -v o="${us[0]}" 'BEGIN { printf "%.4f", (o > 0 ? f / o : 0) }')")
  done
  unset 'BENCH_WRK_EXTRA[${#BENCH_WRK_EXTRA[@]}-1]'
  pair_totals reqs secs ms p50s p99s ratios
}

# pair_totals ANSWERS SECONDS CPU_MS P50S P99S RATIOS [RATIOS2]: names of the caller's arrays
# (per side, ours, floor and, with RATIOS2, floor2: answers, seconds answering, pool CPU ms, the
# rounds' p50s and p99s; and the rounds' ratios to floor, and to floor2). Sets M_* (ours), F_*
# (floor), PAIR_MEDIAN, PAIR_MIN, PAIR_MAX and, with RATIOS2, F2_* and PAIR2_*.
pair_totals() {
  local -n answers_=$1 seconds_=$2 cpu_=$3 p50s_=$4 p99s_=$5
  local side prefix sides=(ours:M floor:F) rps us p50 p99
  [ -z "${7:-}" ] || sides+=(floor2:F2)
  for side in "${sides[@]}"; do
    prefix=${side#*:} side=${side%:*}
    rps=$(awk -v n="${answers_[$side]}" -v t="${seconds_[$side]}" 'BEGIN { printf "%.1f", n / t }')
    us=$(awk -v n="${answers_[$side]}" -v m="${cpu_[$side]}" 'BEGIN { printf "%.0f", m * 1000 / n }')
    p50=$(median <<< "${p50s_[$side]}") p99=$(highest <<< "${p99s_[$side]}")
    printf -v "${prefix}_RPS" %s "$rps"; printf -v "${prefix}_US" %s "$us"
    printf -v "${prefix}_P50" %s "$p50"; printf -v "${prefix}_P99" %s "$p99"
  done
  spread PAIR "$6"
  [ -z "${7:-}" ] || spread PAIR2 "$7"
}

# spread PREFIX RATIOS: PREFIX_MEDIAN, PREFIX_MIN, PREFIX_MAX of the caller's array RATIOS.
spread() {
  local -n values_=$2
  printf -v "$1_MEDIAN" %s "$(median <<< "${values_[*]}")"
  printf -v "$1_MIN" %s "$(printf '%s\n' "${values_[@]}" | sort -g | head -1 | xargs printf '%.2f')"
  printf -v "$1_MAX" %s "$(printf '%s\n' "${values_[@]}" | sort -g | tail -1 | xargs printf '%.2f')"
}

# replay_measure URL BODIES MASTER [MARKER]: each body once; sets M_RPS M_P50 M_P99 M_US.
replay_measure() {
  local cpu0
  cpu0=$(bench_pool_cpu_ms "$3")
  bench_replay "$1" "$2" "$THREADS" "$CONNECTIONS" "$BUNDLE" "$TEAM" "${4:-token}"
  [ "$BENCH_REPLAY_FAILED" = 0 ] || { echo "error: $1: $BENCH_REPLAY_FAILED answers were not 200" >&2; exit 1; }
  # A request that gets no answer (replay.lua counts it lost) is reported, not fatal.
  [ "$BENCH_REPLAY_LOST" = 0 ] || { echo "warning: $1: $BENCH_REPLAY_LOST requests lost in wrk" >&2; LOST_NOTES+=("$1: $BENCH_REPLAY_LOST of $(wc -l < "$2") lost in wrk"); }
  M_RPS=$BENCH_REPLAY_RPS M_P50=$BENCH_REPLAY_P50 M_P99=$BENCH_REPLAY_P99
  M_US=$(awk -v ms="$(( $(bench_pool_cpu_ms "$3") - cpu0 ))" -v n="$BENCH_REPLAY_OK" 'BEGIN { printf "%.0f", ms * 1000 / n }')
}

declare -A TRIVIAL VERIFYH TRIVIAL_US VERIFY_US STORE_RPS UNLIMITED_PAIR
# The per-IP refresh limit a new data directory gets (attestctl init's default).
"$BIN/attestctl" init --data "$DIR/defaults" --test-ca > /dev/null
DEFAULT_REFRESH_PER_IP=$("$BIN/attestctl" config show --data "$DIR/defaults" | awk -F' = ' '$1 == "rateLimits.refreshPerIPPerMinute" { print $2 }')
echo "==> floors through nginx: trivial and one-P-256-verify FastCGI handlers"
for w in $WORKERS_LIST; do
  bench_start_pool P "$DIR/logs/floor.log" "$BIN/attest-fcgi-bench" --mode trivial --socket "$DIR/run/challenge.sock" --workers "$w"
  wrk_measure trivial "$BASE/api/v1/attestation/challenge" "$P"
  TRIVIAL[$w]=$M_RPS TRIVIAL_US[$w]=$M_US
  FLOOR_ROWS+=("| trivial FastCGI handler | $w | $M_RPS | $M_P50 | $M_P99 | $M_US |")
  bench_stop_pool "$P" || true
  bench_start_pool P "$DIR/logs/floor.log" "$BIN/attest-fcgi-bench" --mode p256-verify --socket "$DIR/run/refresh.sock" --workers "$w"
  wrk_measure p256 "$BASE/api/v1/attestation/refresh" "$P"
  VERIFYH[$w]=$M_RPS VERIFY_US[$w]=$M_US
  FLOOR_ROWS+=("| one-P-256-verify handler | $w | $M_RPS | $M_P50 | $M_P99 | $M_US |")
  bench_stop_pool "$P" || true
  echo "workers $w: trivial ${TRIVIAL[$w]}/s, p256-verify ${VERIFYH[$w]}/s"
done

# setup_data DATA SYNC [MAP_MIB]: an initialized data directory for the benchmark app
# (SYNC postgres: store.backend postgres, in a schema of its own).
setup_data() {
  "$BIN/attestctl" init --data "$1" --test-ca > /dev/null
  if [ "$2" = postgres ]; then bench_use_postgres "$BIN" "$1"; fi
  for kv in "store.sync ${2/postgres/commit}" "rateLimits.validatePerIPPerMinute 0" "rateLimits.refreshPerIPPerMinute 0" ${3:+"store.durableMapSizeMiB $3"}; do
    "$BIN/attestctl" config set $kv --data "$1" > /dev/null
  done
  "$BIN/attestctl" org add bench --tier enterprise --data "$1" > /dev/null
  "$BIN/attestctl" app add --org bench --team "$TEAM" --bundle "$BUNDLE" --data "$1" > /dev/null
}
start_pool() { bench_start_pool "POOL_$1" "$DIR/logs/$1.log" "$BIN/attest-$1" --socket "$DIR/run/$1.sock" --workers "$3" --data "$2"; } # ENDPOINT DATA WORKERS
start_pools() { # start_pools DATA WORKERS: the endpoints' pools and, beside them, their one-verify floors
  local e
  for e in challenge validate refresh mad; do start_pool "$e" "$1" "$2"; done
  bench_start_pool POOL_fchallenge "$DIR/logs/floor.log" "$BIN/attest-fcgi-bench" --mode trivial --socket "$DIR/run/floor-challenge.sock" --workers "$2"
  bench_start_pool POOL_fvalidate "$DIR/logs/floor.log" "$BIN/attest-fcgi-bench" --mode p384-verify --socket "$DIR/run/floor-validate.sock" --workers "$2"
  bench_start_pool POOL_frefresh "$DIR/logs/floor.log" "$BIN/attest-fcgi-bench" --mode p256-verify --socket "$DIR/run/floor-refresh.sock" --workers "$2"
  # The least cryptography a refresh can do: the assertion's verify and the token's signature.
  bench_start_pool POOL_frefreshsign "$DIR/logs/floor.log" "$BIN/attest-fcgi-bench" --mode p256-verify-sign --socket "$DIR/run/floor-refresh-sign.sock" --workers "$2"
}
stop_pools() { local e; for e in challenge validate refresh mad fchallenge fvalidate frefresh frefreshsign; do v=POOL_$e; bench_stop_pool "${!v}" || true; done; }
device() { "$BIN/attest-device" --server "$BASE" --team "$TEAM" --bundle "$BUNDLE" --test-ca "$1/test-ca/ca.pem" --state "$2" "${@:3}"; }

# replay_pairs ENDPOINT MASTER FLOOR_MASTER [FLOOR2_MASTER]: the endpoint's bodies ($DIR/ENDPOINT.jsonl) in
# PAIRS consecutive chunks; each chunk is replayed against the endpoint, then the very same
# chunk against its one-verify floor handler (/bench-floor/ENDPOINT: same bodies, POSTs, Lua and
# nginx path), so both meet the same minute of a machine whose speed drifts. Sets M_* for the
# endpoint and F_* for the floor over the whole replay (req/s = answers ÷ time answering; p50
# the chunks' median, p99 the chunks' highest), and PAIR_MEDIAN, PAIR_MIN, PAIR_MAX: the
# chunks' endpoint ÷ floor req/s. With FLOOR2_MASTER, each chunk is then replayed a third time
# against /bench-floor/ENDPOINT-sign, and F2_* and PAIR2_* are that floor's.
replay_pairs() {
  local endpoint=$1 ours=$2 floor=$3 floor2=${4:-} chunk side sides=(ours floor)
  local -A ok=() secs=() ms=() p50s=() p99s=()
  local ratios=() ratios2=()
  [ -z "$floor2" ] || sides+=(floor2)
  rm -f "$DIR/chunk."*
  split -n "l/$PAIRS" -d "$DIR/$endpoint.jsonl" "$DIR/chunk."
  for chunk in "$DIR"/chunk.*; do
    local chunk_rps=()
    for side in "${sides[@]}"; do
      if [ "$side" = ours ]; then
        replay_measure "$BASE/api/v1/attestation/$endpoint" "$chunk" "$ours"
      elif [ "$side" = floor ]; then
        replay_measure "$BASE/bench-floor/$endpoint" "$chunk" "$floor" ok
      else
        replay_measure "$BASE/bench-floor/$endpoint-sign" "$chunk" "$floor2" ok
      fi
      ok[$side]=$(( ${ok[$side]:-0} + BENCH_REPLAY_OK ))
      secs[$side]=$(awk -v a="${secs[$side]:-0}" -v n="$BENCH_REPLAY_OK" -v r="$M_RPS" 'BEGIN { printf "%.6f", a + n / r }')
      ms[$side]=$(awk -v a="${ms[$side]:-0}" -v n="$BENCH_REPLAY_OK" -v u="$M_US" 'BEGIN { printf "%.3f", a + n * u / 1000 }')
      p50s[$side]+="$M_P50 " p99s[$side]+="$M_P99 "
      chunk_rps+=("$M_RPS")
    done
    ratios+=("$(awk -v a="${chunk_rps[0]}" -v b="${chunk_rps[1]}" 'BEGIN { printf "%.4f", a / b }')")
    [ -z "$floor2" ] || ratios2+=("$(awk -v a="${chunk_rps[0]}" -v b="${chunk_rps[2]}" 'BEGIN { printf "%.4f", a / b }')")
  done
  rm -f "$DIR/chunk."*
  pair_totals ok secs ms p50s p99s ratios ${floor2:+ratios2}
}

# conc_row CONNECTIONS: the last replay_pairs (refresh) as a row of the concurrency section.
conc_row() { CONC_ROWS+=("| $sync | $1 | $M_RPS | $M_P50 | $M_P99 | $M_US | $F_RPS | $PAIR_MEDIAN ($PAIR_MIN–$PAIR_MAX) |"); }

for sync in $SYNCS; do
  DATA=$DIR/data-$sync
  setup_data "$DATA" "$sync"
  for w in $WORKERS_LIST; do
    echo "==> store.sync=$sync, $w workers per pool"
    start_pools "$DATA" "$w"
    device "$DATA" "$DIR/hb-$sync.json" enroll > /dev/null
    TOKEN_CACHE=$("$BIN/attestctl" config show --data "$DATA" | awk -F' = ' '$1 == "server.tokenCacheEntries" { print $2 }')
    TOKEN=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["fields"]["token"])' "$DIR/hb-$sync.json")
    device "$DATA" "$DIR/batch.json" batch validate --count "$VALIDATES" --out "$DIR/validate.jsonl" > /dev/null
    device "$DATA" "$DIR/batch.json" batch refresh --count "$REFRESHES" --devices "$DEVICES" --out "$DIR/refresh.jsonl" > /dev/null

    BENCH_WRK_EXTRA=(-H "X-Bundle-ID: $BUNDLE" -H "X-Team-ID: $TEAM")
    wrk_pairs "$BASE/api/v1/attestation/challenge" "$POOL_challenge" "$BASE/bench-floor/challenge" "$POOL_fchallenge"
    ROWS+=("| challenge | $sync | $w | $M_RPS | $M_P50 | $M_P99 | $M_US | $(ratio "${TRIVIAL_US[$w]}" "$M_US") (trivial handler µs ÷ ours); $PAIR_MEDIAN ($PAIR_MIN–$PAIR_MAX) (trivial handler µs ÷ ours, interleaved) |")
    REPLAY_ROWS+=("| trivial FastCGI handler, challenge GETs | $sync | $w | $F_RPS | $F_P50 | $F_P99 | $F_US |")
    cores=$(( w < $(nproc) ? w : $(nproc) ))
    replay_pairs validate "$POOL_validate" "$POOL_fvalidate"
    ROWS+=("| validate | $sync | $w | $M_RPS | $M_P50 | $M_P99 | $M_US | $(ratio "$M_RPS" "$(awk -v r="$RAW_P384" -v c="$cores" 'BEGIN { print r * c }')") (÷ raw P-384 × $cores cores); $PAIR_MEDIAN ($PAIR_MIN–$PAIR_MAX) (÷ P-384 handler, same replay, interleaved) |")
    REPLAY_ROWS+=("| one-P-384-verify handler, validate replay | $sync | $w | $F_RPS | $F_P50 | $F_P99 | $F_US |")
    STORE_RPS[$sync,$w,validate]=$M_RPS
    replay_pairs refresh "$POOL_refresh" "$POOL_frefresh" "$POOL_frefreshsign"
    ROWS+=("| refresh | $sync | $w | $M_RPS | $M_P50 | $M_P99 | $M_US | $(ratio "$M_RPS" "${VERIFYH[$w]}") (÷ verify handler, wrk GET); $PAIR_MEDIAN ($PAIR_MIN–$PAIR_MAX) (÷ P-256 handler, same replay, interleaved); $PAIR2_MEDIAN ($PAIR2_MIN–$PAIR2_MAX) (÷ verify + sign handler, likewise) |")
    REPLAY_ROWS+=("| one-P-256-verify handler, refresh replay | $sync | $w | $F_RPS | $F_P50 | $F_P99 | $F_US |")
    REPLAY_ROWS+=("| P-256 verify + ES256 sign handler, refresh replay | $sync | $w | $F2_RPS | $F2_P50 | $F2_P99 | $F2_US |")
    STORE_RPS[$sync,$w,refresh]=$M_RPS UNLIMITED_PAIR[$sync,$w]="$PAIR_MEDIAN ($PAIR_MIN–$PAIR_MAX)"
    if [ -n "$LOW_CONNECTIONS" ] && [ "$w" = 2 ] && [ "$sync" != postgres ]; then
      HELD_LIMIT=$("$BIN/attestctl" config show --data "$DATA" | awk -F' = ' '$1 == "server.maxHeldAnswers" { print $2 }')
      conc_row "$CONNECTIONS"
      device "$DATA" "$DIR/batch.json" batch refresh --count "$REFRESHES" --devices "$DEVICES" --out "$DIR/refresh.jsonl" > /dev/null
      CONNECTIONS=$LOW_CONNECTIONS replay_pairs refresh "$POOL_refresh" "$POOL_frefresh"
      conc_row "$LOW_CONNECTIONS"
    fi
    if [ -n "$LIMITED_CLIENTS" ] && [ "$w" = 2 ] && [ "$sync" != commit ]; then
      # The refresh pool again with the default per-IP limit, fresh bodies from LIMITED_CLIENTS
      # addresses (X-Forwarded-For, trusted from loopback), interleaved with the same floor.
      bench_stop_pool "$POOL_refresh"
      "$BIN/attestctl" config set rateLimits.refreshPerIPPerMinute "$DEFAULT_REFRESH_PER_IP" --data "$DATA" > /dev/null
      [ -z "$LIMITED_ORG_RATE" ] || "$BIN/attestctl" org set bench --rate-limit "$LIMITED_ORG_RATE" --data "$DATA" > /dev/null
      start_pool refresh "$DATA" "$w"
      device "$DATA" "$DIR/batch.json" batch refresh --count "$REFRESHES" --devices "$DEVICES" --out "$DIR/refresh.jsonl" > /dev/null
      BENCH_REPLAY_CLIENTS=$LIMITED_CLIENTS replay_pairs refresh "$POOL_refresh" "$POOL_frefresh"
      LIMITED_ROWS+=("| $sync | $M_RPS | $M_P50 | $M_P99 | $M_US | $F_RPS | $PAIR_MEDIAN ($PAIR_MIN–$PAIR_MAX) | ${UNLIMITED_PAIR[$sync,$w]} |")
      echo "${LIMITED_ROWS[-1]}"
      bench_stop_pool "$POOL_refresh"
      "$BIN/attestctl" config set rateLimits.refreshPerIPPerMinute 0 --data "$DATA" > /dev/null
      [ -z "$LIMITED_ORG_RATE" ] || "$BIN/attestctl" org set bench --rate-limit 0 --data "$DATA" > /dev/null
      start_pool refresh "$DATA" "$w"
    fi
    BENCH_WRK_EXTRA=(-s "$DIR/heartbeat.lua")
    printf 'wrk.method = "POST"\nwrk.body = "{}"\nwrk.headers["Content-Type"] = "application/json"\nwrk.headers["X-Bundle-ID"] = "%s"\nwrk.headers["X-Team-ID"] = "%s"\nwrk.headers["Authorization"] = "Bearer %s"\n' "$BUNDLE" "$TEAM" "$TOKEN" > "$DIR/heartbeat.lua"
    # The same token again and again, as a device sends it every 120 s until it refreshes:
    # each worker checks its signature once (server.tokenCacheEntries). Then the mad pool
    # again with 0 entries: every heartbeat checks the signature, as a token new to the worker.
    wrk_measure heartbeat "$BASE/api/v1/heartbeat" "$POOL_mad"
    ROWS+=("| heartbeat, token seen before | $sync | $w | $M_RPS | $M_P50 | $M_P99 | $M_US | $(ratio "$M_RPS" "${VERIFYH[$w]}") (÷ verify handler); $(ratio "$M_RPS" "${TRIVIAL[$w]}") (÷ trivial handler) |")
    bench_stop_pool "$POOL_mad"
    "$BIN/attestctl" config set server.tokenCacheEntries 0 --data "$DATA" > /dev/null
    start_pool mad "$DATA" "$w"
    wrk_measure heartbeat "$BASE/api/v1/heartbeat" "$POOL_mad"
    ROWS+=("| heartbeat, every signature checked | $sync | $w | $M_RPS | $M_P50 | $M_P99 | $M_US | $(ratio "$M_RPS" "${VERIFYH[$w]}") (÷ verify handler) |")
    "$BIN/attestctl" config set server.tokenCacheEntries "$TOKEN_CACHE" --data "$DATA" > /dev/null
    BENCH_WRK_EXTRA=()
    stop_pools
    printf '%s\n' "${ROWS[@]: -5}"
  done
done

for n in $SCALES; do
  # The map by docs/storage.md's formula: 1 GiB + 2 KiB per device.
  map=$(( 1024 + n * 2 / 1024 ))
  DATA=$DIR/data-scale-$n
  echo "==> $n devices preloaded (store.sync=$SCALE_SYNC, map $map MiB)"
  setup_data "$DATA" "$SCALE_SYNC" "$map"
  LOAD=$("$BIN/attest-bench" store load --count "$n" --app "$TEAM.$BUNDLE" --data "$DATA")
  start_pools "$DATA" "$SCALE_WORKERS"
  device "$DATA" "$DIR/batch.json" batch validate --count "$VALIDATES" --out "$DIR/validate.jsonl" > /dev/null
  device "$DATA" "$DIR/batch.json" batch refresh --count "$REFRESHES" --devices "$DEVICES" --out "$DIR/refresh.jsonl" > /dev/null
  replay_measure "$BASE/api/v1/attestation/validate" "$DIR/validate.jsonl" "$POOL_validate"
  v="$M_RPS | $M_P99 | $M_US"
  replay_measure "$BASE/api/v1/attestation/refresh" "$DIR/refresh.jsonl" "$POOL_refresh"
  SCALE_ROWS+=("| $n | $v | $M_RPS | $M_P99 | $M_US | $(sed 's/.*bytes_per_device=\([0-9]*\).*/\1/' <<< "$LOAD") |")
  stop_pools
  rm -rf "$DATA"
  echo "${SCALE_ROWS[-1]}"
done

for sync in $ABLATIONS; do
  echo "==> ablate.sh, store.sync=$sync"
  SYNC=$sync CONNECTIONS=$CONNECTIONS TABLE_OUT=$DIR/ablate-$sync.md bash nginx/bench/ablate.sh | grep '^round'
done

read -r STEAL1 TOTAL1 < <(cpu_ticks)
STOLEN=$(awk -v s=$((STEAL1 - STEAL0)) -v t=$((TOTAL1 - TOTAL0)) 'BEGIN { printf "%.1f", t ? 100 * s / t : 0 }')
{
  echo "# AttestEdge benchmarks"
  echo
  echo "Written by \`nginx/bench/all.sh\` on $STARTED; reproduce with \`bash nginx/bench/all.sh\`"
  echo "(settings: WORKERS_LIST=\"$WORKERS_LIST\" SYNCS=\"$SYNCS\" SCALES=\"$SCALES\" DURATION=$DURATION VALIDATES=$VALIDATES REFRESHES=$REFRESHES DEVICES=$DEVICES, wrk -t$THREADS -c$CONNECTIONS)."
  echo "Every ratio divides figures measured in this run. One run: machine noise (other"
  echo "processes on a shared box) moves single figures by several percent; see docs/performance.md."
  echo
  echo "## Machine"
  echo
  echo "- $(nproc) cores: $(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo); $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo) RAM"
  echo "- $(uname -sr); data on $(df -T /tmp | awk 'NR == 2 { print $2 }'); $(nginx -v 2>&1); $(openssl version 2>/dev/null || echo OpenSSL 3); LMDB $(dpkg-query -W -f='${Version}' liblmdb0 2>/dev/null)"
  echo "- load average at start: $LOAD_START (other users' processes included); CPU time stolen by the"
  echo "  hypervisor during the run: $STOLEN% (/proc/stat steal)"
  echo
  echo "## Floors and peer (one core unless said)"
  echo
  echo "| measurement | rate/s | ratio |"
  echo "|---|---|---|"
  echo "| OpenSSL P-256 verify (raw) | $RAW_P256 | |"
  echo "| OpenSSL P-384 verify (raw) | $RAW_P384 | |"
  echo "| our attestation verify (Apple's sample, in-process) | $ATTEST_RATE | $ATTEST_RATIO of raw P-384 |"
  echo "| our assertion verify (in-process) | $ASSERT_RATE | $ASSERT_RATIO of raw P-256 |"
  echo "| pyattest 1.0.5 attestation verify (same sample, time pinned) | $PEER | ours ÷ peer = $(ratio "$ATTEST_RATE" "$PEER") |"
  echo "| LMDB durable puts (one synced commit each) | $DURABLE_PUTS | |"
  echo "| LMDB no-sync puts | $NOSYNC_PUTS | $(ratio "$NOSYNC_PUTS" "$DURABLE_PUTS") × durable |"
  for kind in warm cold; do
    v=INPROC_${kind^^}
    us=$(field refresh_us <<< "${!v}") crypto=$(awk -v a="$(field verify_us <<< "${!v}")" -v b="$(field sign_us <<< "${!v}")" 'BEGIN { print a + b }')
    echo "| our refresh in-process, keys $kind ($us µs; P-256 verify + ES256 sign $crypto µs in the same run) | $(awk -v u="$us" 'BEGIN { printf "%.0f", 1e6 / u }') | $(ratio "$crypto" "$us") of verify + sign |"
  done
  echo
  echo "Through nginx (wrk, ${DURATION}s):"
  echo
  echo "| handler | workers | req/s | p50 ms | p99 ms | pool CPU µs/req |"
  echo "|---|---|---|---|---|---|"
  printf '%s\n' "${FLOOR_ROWS[@]}"
  echo
  echo "The same handlers driven exactly as the endpoints are (each pre-generated validate or"
  echo "refresh body POSTed once through nginx by replay.lua; challenge GETs by wrk), per pass of"
  echo "the endpoint table. The bodies go in $PAIRS chunks, each replayed against the endpoint and then"
  echo "against its floor handler, and the GETs in $PAIRS rounds of $(( (DURATION + PAIRS - 1) / PAIRS ))s each way, so both meet"
  echo "the same minute of the machine (its speed drifts by tens of percent within a run); req/s is"
  echo "answers ÷ time answering, p50 the chunks' median, p99 their highest:"
  echo
  echo "| handler | store.sync pass | workers | req/s | p50 ms | p99 ms | pool CPU µs/req |"
  echo "|---|---|---|---|---|---|---|"
  printf '%s\n' "${REPLAY_ROWS[@]}"
  echo
  echo "## Endpoints through nginx"
  echo
  echo "challenge: wrk in $PAIRS rounds of $(( (DURATION + PAIRS - 1) / PAIRS ))s; heartbeat: wrk for ${DURATION}s; validate and refresh: every"
  echo "pre-generated body sent once (bench_replay). Latencies are wrk's; a replay's include a few idle polls of"
  echo "threads that finished first (nginx 404s). Aims (issue #12, 2 workers): refresh ÷ verify"
  echo "handler ≥ 0.5 commit / 0.75 interval; validate ÷ raw P-384 × cores ≥ 0.6 / 0.75;"
  echo "challenge trivial-µs ÷ ours ≥ 0.95. Challenge, validate and refresh show two ratios: the issue's"
  echo "floor (the floor table above, measured once at the start; or OpenSSL in-process with no HTTP at all) and the"
  echo "floor handler under the very same load, interleaved with ours round by round: the median of"
  echo "the $PAIRS rounds' ratios, their range in brackets. p50 and p99 of challenge, validate and refresh"
  echo "are the rounds' median p50 and highest p99. Heartbeat: one device's token sent again and again,"
  echo "as a device sends it every 120 s until it refreshes; each worker checks its signature once"
  echo "(server.tokenCacheEntries), then, on the second row, with 0 entries: every heartbeat's signature"
  echo "is checked, as for a token the worker sees for the first time. Refresh's third ratio is"
  echo "against a handler that does the least cryptography a refresh must do: one P-256 verify and one"
  echo "ES256 signature (OpenSSL's signer, nothing prepared ahead), chunk by chunk after the other two; it"
  echo "is not the issue's floor, it shows how much of the gap to it is cryptography a refresh cannot skip."
  echo
  echo "| path | store | workers | req/s | p50 ms | p99 ms | pool CPU µs/req | ratio |"
  echo "|---|---|---|---|---|---|---|---|"
  printf '%s\n' "${ROWS[@]}"
  echo
  echo "Store: \`commit\` and \`interval\` are LMDB's store.sync settings; \`postgres\` is the PostgreSQL"
  echo "backend (store.backend postgres: a local PostgreSQL 15 cluster with fsync on, every"
  echo "endpoint's work one SQL transaction, committed durably before the answer)."
  echo
  if [[ " $SYNCS " == *" postgres "* && " $SYNCS " == *" commit "* ]]; then
    echo "PostgreSQL ÷ LMDB (store.sync commit), both durable before answering, one host:"
    echo
    echo "| workers | validate | refresh |"
    echo "|---|---|---|"
    for w in $WORKERS_LIST; do
      echo "| $w | $(ratio "${STORE_RPS[postgres,$w,validate]}" "${STORE_RPS[commit,$w,validate]}") | $(ratio "${STORE_RPS[postgres,$w,refresh]}" "${STORE_RPS[commit,$w,refresh]}") |"
    done
    echo
  fi
  if [ ${#CONC_ROWS[@]} != 0 ]; then
    echo "## Client concurrency (refresh, 2 workers, LMDB)"
    echo
    echo "The refresh replay at the table's $CONNECTIONS connections and again, with fresh bodies, at"
    echo "$LOW_CONNECTIONS, each interleaved with the one-P-256-verify handler at the same count (ratio: ours ÷"
    echo "handler req/s, the chunks' median and range). A worker holds answers while it serves what"
    echo "is queued and commits them as one group (at most server.maxHeldAnswers, $HELD_LIMIT); with few clients"
    echo "the queue empties sooner, groups are smaller, and in commit mode more syncs are paid."
    echo
    echo "| store.sync | connections | req/s | p50 ms | p99 ms | pool CPU µs/req | handler req/s | ratio |"
    echo "|---|---|---|---|---|---|---|---|"
    printf '%s\n' "${CONC_ROWS[@]}"
    echo
  fi
  if [ ${#LIMITED_ROWS[@]} != 0 ]; then
    echo "## Refresh with the default per-IP rate limit (2 workers)"
    echo
    echo "The endpoint rows above run with rate limits off. Every deployment pays at least the per-IP"
    echo "bucket (rateLimits.refreshPerIPPerMinute, $DEFAULT_REFRESH_PER_IP by default): one more entry written in the"
    echo "admission's transaction. Here the refresh pool runs with that default, fresh bodies spread over"
    echo "$LIMITED_CLIENTS client addresses (X-Forwarded-For, trusted from loopback), each chunk interleaved"
    echo "with the one-P-256-verify handler; the last column is the same ratio with limits off, from"
    if [ -n "$LIMITED_ORG_RATE" ]; then
      echo "the endpoint table. The organization also has a limit of its own, $LIMITED_ORG_RATE requests a minute (one"
      echo "bucket that every request charges)."
    else
      echo "the endpoint table. The organization (enterprise tier) has no limit of its own."
    fi
    echo
    echo "| store | req/s | p50 ms | p99 ms | pool CPU µs/req | handler req/s | ratio, limit on | ratio, limits off |"
    echo "|---|---|---|---|---|---|---|---|"
    printf '%s\n' "${LIMITED_ROWS[@]}"
    echo
  fi
  if [ ${#LOST_NOTES[@]} != 0 ]; then
    echo "Requests that got no answer (lost in wrk; not counted):"
    echo
    printf -- '- %s\n' "${LOST_NOTES[@]}"
    echo
  fi
  echo "## Scaling with the store ($SCALE_SYNC, $SCALE_WORKERS workers)"
  echo
  echo "Devices preloaded with \`attest-bench store load\`, which then compacts the durable environment as a"
  echo "restore would (its bulk transactions leave a large LMDB free-page list that every later commit"
  echo "rewrites; see its help); the map sized 1 GiB + 2 KiB per device. The rows run one after the other,"
  echo "minutes apart, on a machine whose speed drifts: for a fair comparison run the sizes back to back in"
  echo "both orders (SYNCS=\"\" LOW_CONNECTIONS=\"\" WORKERS_LIST=2 SCALES=\"1000000 10000 1000000 10000\")."
  echo
  echo "| devices | validate/s | validate p99 ms | validate µs/req | refresh/s | refresh p99 ms | refresh µs/req | durable bytes/device |"
  echo "|---|---|---|---|---|---|---|---|"
  printf '%s\n' "${SCALE_ROWS[@]}"
  for sync in $ABLATIONS; do
    echo
    echo "## Where a refresh's cost goes ($sync, 2 workers, $CONNECTIONS clients)"
    echo
    echo "\`nginx/bench/ablate.sh\`: parts of refresh switched off in a separate build (swift -DATTEST_ABLATE,"
    echo "never in the shipped binaries), each variant's pool replaying its own chunk of refreshes and the"
    echo "one-P-256-verify handler the same chunk right after it, round by round. no-token: a same-size"
    echo "placeholder instead of the token (no signature, no nonce preparation); no-write: no device write and"
    echo "no monthly-active count; no-admit: no ephemeral write (rate windows, single use of the challenge);"
    echo "no-verify: no check of the assertion's signature."
    echo
    cat "$DIR/ablate-$sync.md"
  done
} > "$OUT"
echo "==> wrote $OUT"
# Flags and What's New against heartbeat, and the flag stream's capacity: their own section.
if [ "${FLAGS_BENCH:-1}" != 0 ]; then OUT=$OUT bash nginx/bench/flags.sh; fi
