#!/usr/bin/env bash
# Profile (issue #12): one endpoint's pool under a replay through nginx, `perf record -g` on
# its workers, and a per-request breakdown by shared object (µs of worker CPU per request).
# Installs perf (Debian linux-perf) and valgrind when missing; needs root or perf_event_paranoid <= 1.
# Not part of the tests.
#   bash nginx/bench/profile.sh                       # refresh, interval, 2 workers
#   ENDPOINT=validate SYNC=commit COUNT=3000 WORKERS=2 OUT=/tmp/prof bash nginx/bench/profile.sh
#   ENDPOINT=challenge SECONDS_LOAD=5 bash nginx/bench/profile.sh   # wrk GETs instead of a replay
# CALLGRAPH="--call-graph dwarf,16384" unwinds through libcrypto (built without frame pointers).
# Also counts the pool's fdatasync, pwrite, flock and epoll_wait calls per request (perf stat),
# its context switches per request (voluntary: it waited) and how idle the box was while loaded.
# CONNECTIONS (default 64, as all.sh): wrk's connections, i.e. concurrent clients; in commit
# mode they bound the groups (16 leaves workers waiting on syncs with cores idle).
# PRELOAD=N first writes N synthetic devices into the store (bench store load).
# SETTINGS="key value;key value" sets more configuration keys (e.g. "server.maxHeldAnswers 1").
# CALLGRIND=1 runs the endpoint's pool under valgrind's callgrind instead of perf and prints the
# instructions its workers execute per request (deterministic: compare with the in-process
# figure of `attest-bench refresh` under callgrind); use a small COUNT (valgrind is ~50× slower).
# Writes OUT/perf.data, OUT/report-dso.txt (by shared object), OUT/report-sym.txt (by symbol,
# children excluded), OUT/summary.txt (requests, worker CPU ms, µs/request).
set -euo pipefail
cd "$(dirname "$0")/../.."
ATTEST_EXTRA_PACKAGES="linux-perf valgrind" source nginx/scripts/deps.sh
source nginx/bench/lib.sh

ENDPOINT=${ENDPOINT:-refresh}
SYNC=${SYNC:-interval}
COUNT=${COUNT:-20000}
DEVICES=${DEVICES:-2000}
WORKERS=${WORKERS:-2}
CONNECTIONS=${CONNECTIONS:-64}
OUT=${OUT:-/tmp/attestedge-profile}
TEAM=BENCH00001 BUNDLE=com.example.bench
BIN=${BIN:-$PWD/.build/release}
[ -x "$BIN/attest-refresh" ] && [ -x "$BIN/attest-bench" ] || swift build -c release 2>&1 | tail -1
mkdir -p "$OUT"

DIR=$(mktemp -d /tmp/attestedge-profile.XXXXXX)
trap 'bench_cleanup; rm -rf "$DIR"' EXIT
DATA=$DIR/data
IFS=';' read -r -a extra <<< "${SETTINGS:-}"
bench_data "$BIN" "$DATA" "$TEAM" "$BUNDLE" "store.sync $SYNC" "rateLimits.validatePerIPPerMinute 0" "rateLimits.refreshPerIPPerMinute 0" "${extra[@]}"
if [ "${PRELOAD:-0}" -gt 0 ]; then
  # Scaling: PRELOAD synthetic devices written straight into the store, the map by the
  # docs/storage.md's formula (1 GiB + 2 KiB per device), as all.sh's scaling part does.
  "$BIN/attestctl" config set store.durableMapSizeMiB $(( 1024 + PRELOAD * 2 / 1024 )) --data "$DATA" > /dev/null
  "$BIN/attest-bench" store load --count "$PRELOAD" --app "$TEAM.$BUNDLE" --data "$DATA"
fi
PORT=$(bench_free_port)
BENCH_NO_RATE_LIMIT=1 bench_render_nginx "$DIR" "$PORT"
bench_start_nginx "$DIR"
BASE="http://127.0.0.1:$PORT"
for e in challenge validate refresh; do
  run=("$BIN/attest-$e")
  if [ -n "${CALLGRIND:-}" ] && [ "$e" = "$ENDPOINT" ]; then
    run=(valgrind --tool=callgrind --trace-children=yes --callgrind-out-file="$OUT/callgrind.%p" "${run[@]}")
  fi
  bench_start_pool "POOL_$e" "$DIR/logs/$e.log" "${run[@]}" --socket "$DIR/run/$e.sock" --workers "$WORKERS" --data "$DATA"
done
DEV=("$BIN/attest-device" --server "$BASE" --team "$TEAM" --bundle "$BUNDLE" --state "$DIR/device.json" --test-ca "$DATA/test-ca/ca.pem")
if [ "$ENDPOINT" = challenge ]; then
  :
elif [ "$ENDPOINT" = refresh ]; then
  "${DEV[@]}" batch refresh --count "$COUNT" --devices "$DEVICES" --out "$DIR/bodies.jsonl" > /dev/null
else
  "${DEV[@]}" batch validate --count "$COUNT" --out "$DIR/bodies.jsonl" > /dev/null
fi
pool=POOL_$ENDPOINT
pids=$(bench_workers "${!pool}" | paste -sd,)
if [ -n "${CALLGRIND:-}" ]; then
  # Instructions the workers execute per request (user space; the kernel's work is not
  # counted): the first tenth of the bodies warms the workers up, counters are zeroed, the
  # rest is replayed, and the workers' counters are dumped.
  [ "$ENDPOINT" != challenge ] || { echo "CALLGRIND needs a replayed endpoint (validate, refresh)" >&2; exit 2; }
  total=$(wc -l < "$DIR/bodies.jsonl") warm=$(( $(wc -l < "$DIR/bodies.jsonl") / 10 ))
  head -n "$warm" "$DIR/bodies.jsonl" > "$DIR/warm.jsonl"
  tail -n +"$((warm + 1))" "$DIR/bodies.jsonl" > "$DIR/measured.jsonl"
  bench_replay "$BASE/api/v1/attestation/$ENDPOINT" "$DIR/warm.jsonl" 1 4 "$BUNDLE" "$TEAM"
  for p in ${pids//,/ }; do callgrind_control -z "$p" > /dev/null 2>&1; done
  bench_replay "$BASE/api/v1/attestation/$ENDPOINT" "$DIR/measured.jsonl" 1 4 "$BUNDLE" "$TEAM"
  rm -f "$OUT"/callgrind.*
  for p in ${pids//,/ }; do callgrind_control -d "$p" > /dev/null 2>&1; done
  sleep 1
  instructions=$(cat "$OUT"/callgrind.* 2>/dev/null | awk '/^summary:/ { n += $2 } END { print n + 0 }')
  echo "endpoint=$ENDPOINT sync=$SYNC workers=$WORKERS ok=$BENCH_REPLAY_OK failed=$BENCH_REPLAY_FAILED (of $((total - warm)) after $warm to warm up)" | tee "$OUT/summary.txt"
  awk -v i="$instructions" -v n="$BENCH_REPLAY_OK" 'BEGIN { printf "instructions per request (workers, user space)=%.0f\n", i / n }' | tee -a "$OUT/summary.txt"
  echo "per function: callgrind_annotate --inclusive=yes $OUT/callgrind.<pid>"
  exit 0
fi
# Context switches of the workers (voluntary: they waited; involuntary: preempted) and the
# box's idle share while the load ran: a pool that waits leaves cores idle.
ctxsw() { local v=0 n=0 w a b; for w in ${pids//,/ }; do read -r a b < <(awk '/^voluntary_ctxt/ { v = $2 } /^nonvoluntary_ctxt/ { n = $2 } END { print v, n }' "/proc/$w/status"); v=$((v + a)) n=$((n + b)); done; echo "$v $n"; }
idle() { awk '/^cpu / { t = 0; for (i = 2; i <= NF; i++) t += $i; print $5 + $6, t }' /proc/stat; }
read -r vol0 invol0 < <(ctxsw); read -r idle0 total0 < <(idle)
cpu0=$(bench_pool_cpu_ms "${!pool}")
perf record ${CALLGRAPH:---call-graph fp} -o "$OUT/perf.data" -p "$pids" 2> "$OUT/perf-record.log" &
PERF=$!
# The pool's fdatasync and pwrite calls (store syncs and page writes), counted per request below;
# flock: a sync made for held answers rather than inside a commit takes and drops the lock of
# durable/sync.state (two calls each; store.sync=commit); epoll_wait: the worker found nothing
# queued and waited (its held answers were settled first).
COUNTED=(fdatasync pwrite64 flock epoll_wait)
perf stat -x, -e "$(printf 'syscalls:sys_enter_%s,' "${COUNTED[@]}" | sed 's/,$//')" -p "$pids" -o "$OUT/syscalls.csv" 2>/dev/null &
STAT=$!
sleep 0.5
if [ "$ENDPOINT" = challenge ]; then
  # GETs for SECONDS (default 5); the figures below count wrk's requests.
  BENCH_WRK_EXTRA=(-H "X-Bundle-ID: $BUNDLE" -H "X-Team-ID: $TEAM")
  bench_wrk "$BASE/api/v1/attestation/challenge" 2 "$CONNECTIONS" "${SECONDS_LOAD:-5}"
  BENCH_REPLAY_OK=$(bench_requests) BENCH_REPLAY_FAILED=0 BENCH_REPLAY_RPS=$BENCH_RPS
else
  bench_replay "$BASE/api/v1/attestation/$ENDPOINT" "$DIR/bodies.jsonl" 2 "$CONNECTIONS" "$BUNDLE" "$TEAM"
fi
cpu1=$(bench_pool_cpu_ms "${!pool}")
read -r vol1 invol1 < <(ctxsw); read -r idle1 total1 < <(idle)
kill -INT "$PERF" "$STAT"; wait "$PERF" || true; wait "$STAT" || true
perf report -i "$OUT/perf.data" --no-children --sort dso --stdio -g none 2>/dev/null > "$OUT/report-dso.txt" || true
perf report -i "$OUT/perf.data" --no-children --sort dso,sym --stdio -g none 2>/dev/null > "$OUT/report-sym.txt" || true
{
  echo "endpoint=$ENDPOINT sync=$SYNC workers=$WORKERS connections=$CONNECTIONS ok=$BENCH_REPLAY_OK failed=$BENCH_REPLAY_FAILED rps=$BENCH_REPLAY_RPS"
  echo "worker CPU ms=$((cpu1 - cpu0)) us/request=$(awk -v ms=$((cpu1 - cpu0)) -v n="$BENCH_REPLAY_OK" 'BEGIN { printf "%.1f", ms * 1000 / n }')"
  awk -v v=$((vol1 - vol0)) -v i=$((invol1 - invol0)) -v n="$BENCH_REPLAY_OK" 'BEGIN { printf "context switches per request: voluntary=%.2f involuntary=%.2f\n", v / n, i / n }'
  awk -v i=$((idle1 - idle0)) -v t=$((total1 - total0)) 'BEGIN { printf "box idle while loaded (idle + iowait)=%.1f%%\n", 100 * i / t }'
  awk -F, -v n="$BENCH_REPLAY_OK" '/sys_enter_/ { sub(/.*sys_enter_/, "", $3); printf "%s per request=%.2f\n", $3, $1 / n }' "$OUT/syscalls.csv" 2>/dev/null || true
} > "$OUT/summary.txt"
cat "$OUT/summary.txt"
