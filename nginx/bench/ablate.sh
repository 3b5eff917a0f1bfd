#!/usr/bin/env bash
# What each part of a refresh costs through nginx (issue #12), by switching parts off.
#
# Builds attest-refresh a second time with the compile-time switch ATTEST_ABLATE
# (`swift build -c release -Xswiftc -DATTEST_ABLATE`, into its own scratch path, .build/ablate):
# only that build contains the `#if ATTEST_ABLATE` lines (AssertionVerifier, Admission,
# RefreshEndpoint, ServiceResponder), which read the environment variable ATTEST_ABLATE and can
# switch off the signature check; the shipped binaries never do. Then, round by round, for each
# variant: starts that pool with ATTEST_ABLATE set,
# replays one chunk of pre-generated refreshes through nginx against it and the same chunk against
# the one-P-256-verify handler (interleaved, as all.sh's ratios), and stops it. Variants:
#   base          the real refresh
#   no-token      no token: a same-size placeholder answer, no signature, no nonce preparation
#   no-write      no final device write and no monthly-active-device count (the group still commits)
#   no-admit      no ephemeral write (rate windows, single use of the challenge): the device is
#                 read in a read-only transaction instead
#   no-verify     no ECDSA verification of the assertion (everything else as base)
#   twice-verify  the assertion's signature verified twice (does a verify cost more in the pool
#                 than in the floor handler because of what runs around it?)
# and any comma-joined set of them. Prints per round and a summary: median ratio (ours ÷ floor),
# median worker CPU per refresh (user + system µs) and its difference from base.
# Not part of the tests (minutes). ABLATE_BUILD=dir puts the ablation build elsewhere.
#   bash nginx/bench/ablate.sh
#   VARIANTS="base no-token no-write" ROUNDS=6 PER=5000 SYNC=commit CONNECTIONS=64 bash nginx/bench/ablate.sh
# TABLE_OUT=path also writes the summary table there (all.sh puts it in BENCHMARKS.md).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
source nginx/scripts/deps.sh
source nginx/bench/lib.sh

VARIANTS=(${VARIANTS:-base no-token no-write no-admit no-token,no-write,no-admit no-verify})
ROUNDS=${ROUNDS:-4}
PER=${PER:-5000}
SYNC=${SYNC:-interval}
WORKERS=${WORKERS:-2}
CONNECTIONS=${CONNECTIONS:-64}
DEVICES=${DEVICES:-1000}
TEAM=BENCH00001 BUNDLE=com.example.bench

echo "==> release build"
swift build -c release 2>&1 | tail -1
BIN=$ROOT/.build/release
DIR=$(mktemp -d /tmp/attestedge-ablate.XXXXXX)
trap 'bench_cleanup; rm -rf "$DIR"' EXIT

ABLATE_BUILD=${ABLATE_BUILD:-$ROOT/.build/ablate}
echo "==> ablation build (-DATTEST_ABLATE, in $ABLATE_BUILD)"
swift build -c release --product attest-refresh --scratch-path "$ABLATE_BUILD" -Xswiftc -DATTEST_ABLATE 2>&1 | tail -1
ABIN=$ABLATE_BUILD/release

DATA=$DIR/data
bench_data "$BIN" "$DATA" "$TEAM" "$BUNDLE" "store.sync $SYNC" "rateLimits.validatePerIPPerMinute 0" "rateLimits.refreshPerIPPerMinute 0"
PORT=$(bench_free_port)
BENCH_FLOOR_LOCATIONS=1 BENCH_NO_RATE_LIMIT=1 bench_render_nginx "$DIR" "$PORT"
bench_start_nginx "$DIR"
BASE="http://127.0.0.1:$PORT"
for e in challenge validate; do
  bench_start_pool "POOL_$e" "$DIR/logs/$e.log" "$BIN/attest-$e" --socket "$DIR/run/$e.sock" --workers "$WORKERS" --data "$DATA"
done
bench_start_pool FLOOR "$DIR/logs/floor.log" "$BIN/attest-fcgi-bench" --mode p256-verify --socket "$DIR/run/floor-refresh.sock" --workers "$WORKERS"

TOTAL=$(( ${#VARIANTS[@]} * ROUNDS * PER ))
DEVICES=$(( DEVICES < TOTAL ? DEVICES : TOTAL ))
echo "==> $TOTAL refreshes for $DEVICES devices (enrolled through the unmodified parts of the ablation build)"
bench_start_pool REFRESH "$DIR/logs/refresh.log" "$ABIN/attest-refresh" --socket "$DIR/run/refresh.sock" --workers "$WORKERS" --data "$DATA"
"$BIN/attest-device" --server "$BASE" --team "$TEAM" --bundle "$BUNDLE" --state "$DIR/device.json" \
  --test-ca "$DATA/test-ca/ca.pem" batch refresh --count "$TOTAL" --devices "$DEVICES" --out "$DIR/bodies.jsonl" > /dev/null
bench_stop_pool "$REFRESH" || true
split -n l/$(( ${#VARIANTS[@]} * ROUNDS )) -d -a 3 "$DIR/bodies.jsonl" "$DIR/chunk."
CHUNKS=("$DIR"/chunk.*)

# user and system ticks of a pool's workers
ticks() { local u=0 s=0 w a b; for w in $(bench_workers "$1"); do read -r a b < <(awk '{ print $14, $15 }' "/proc/$w/stat"); u=$((u + a)); s=$((s + b)); done; echo "$u $s"; }
# replay a chunk; prints "requests/s user-µs system-µs" per request of the pool
measure() {
  local pool=$1 url=$2 chunk=$3 marker=$4 u0 s0 u1 s1
  read -r u0 s0 < <(ticks "$pool")
  bench_replay "$url" "$chunk" 2 "$CONNECTIONS" "$BUNDLE" "$TEAM" "$marker"
  read -r u1 s1 < <(ticks "$pool")
  [ "$BENCH_REPLAY_FAILED" = 0 ] || echo "  ($BENCH_REPLAY_FAILED of the chunk failed)" >&2
  awk -v r="$BENCH_REPLAY_RPS" -v u=$((u1 - u0)) -v s=$((s1 - s0)) -v n="$BENCH_REPLAY_OK" -v hz="$(getconf CLK_TCK)" \
    'BEGIN { printf "%.0f %.0f %.0f\n", r, u * 1e6 / hz / n, s * 1e6 / hz / n }'
}

echo "==> $ROUNDS rounds of ${#VARIANTS[@]} variants, $PER refreshes a chunk, $CONNECTIONS clients, $WORKERS workers, store.sync $SYNC"
RESULTS=$DIR/results
index=0
for round in $(seq 1 "$ROUNDS"); do
  for variant in "${VARIANTS[@]}"; do
    chunk=${CHUNKS[$index]}
    index=$((index + 1))
    parts=$variant
    [ "$variant" = base ] && parts=""
    ATTEST_ABLATE=$parts bench_start_pool REFRESH "$DIR/logs/refresh.log" "$ABIN/attest-refresh" \
      --socket "$DIR/run/refresh.sock" --workers "$WORKERS" --data "$DATA"
    read -r ours ours_user ours_sys < <(measure "$REFRESH" "$BASE/api/v1/attestation/refresh" "$chunk" token)
    read -r floor floor_user floor_sys < <(measure "$FLOOR" "$BASE/bench-floor/refresh" "$chunk" ok)
    bench_stop_pool "$REFRESH" || true
    ratio=$(awk -v a="$ours" -v b="$floor" 'BEGIN { printf "%.2f", a / b }')
    printf 'round %d %-32s ours %5s/s %4s+%-3s µs  floor %5s/s %4s+%-3s µs  ratio %s\n' \
      "$round" "$variant" "$ours" "$ours_user" "$ours_sys" "$floor" "$floor_user" "$floor_sys" "$ratio"
    echo "$variant $ratio $((ours_user + ours_sys)) $ours_user $ours_sys" >> "$RESULTS"
  done
done

column_of() { awk -v v="$1" -v c="$2" '$1 == v { print $c }' "$RESULTS"; }
base_cpu=$(column_of base 3 | bench_median)
{
echo "| variant | ratio, median (spread) | worker CPU per refresh, median µs (user + system) | vs base |"
echo "|---|---|---|---|"
for variant in "${VARIANTS[@]}"; do
  ratios=$(column_of "$variant" 2 | sort -g | paste -sd' ')
  cpu=$(column_of "$variant" 3 | bench_median)
  printf '| %s | %s (%s) | %.0f (%.0f + %.0f) | %+.0f µs |\n' "$variant" "$(column_of "$variant" 2 | bench_median)" \
    "$(echo "$ratios" | awk '{ print $1 "–" $NF }')" "$cpu" "$(column_of "$variant" 4 | bench_median)" \
    "$(column_of "$variant" 5 | bench_median)" "$(awk -v a="$cpu" -v b="$base_cpu" 'BEGIN { print a - b }')"
done
} > "$DIR/table.md"
echo
cat "$DIR/table.md"
[ -z "${TABLE_OUT:-}" ] || cp "$DIR/table.md" "$TABLE_OUT"
echo
echo "ratio: ours ÷ the one-P-256-verify handler on the same chunk, right after it; $ROUNDS rounds, $PER refreshes each."
