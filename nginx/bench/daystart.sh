#!/usr/bin/env bash
# Benchmark (PostgreSQL store): a fleet's first requests of a UTC day, when every device counted
# earlier in the month is counted active for the new day at once (START=day, the default), or
# of a month, when every device is counted anew (START=month).
#   PROCESSES processes (default 4) each count DEVICES devices (default 5000) of their own, all
#   counted on an earlier day (START=month: of the month before), in transactions of BATCH
#   (default 16: a worker's group commit), through the admission code requests use (`attest-bench
#   usage --at`, an organization without a limit), 30 s after midnight UTC. Rounds
#   alternate two layouts of the same work:
#     shared  every process in one organization (one schema), as a deployment's workers are
#     apart   each process in a store of its own (a schema each): nothing shared to conflict on
#   and it prints devices counted per second of each, shared ÷ apart, and the transactions the
#   database rolled back (serialization conflicts, each run again).
#   BASE_BIN=DIR (a build's .build/release, whose `bench usage` takes --at, --from and --batch)
#   adds a shared round of that build after each pair, for a before/after comparison.
# Prints numbers, asserts nothing; not part of the test suite.
#   bash nginx/bench/daystart.sh
#   ROUNDS=3 PROCESSES=4 DEVICES=5000 BATCH=16 START=month bash nginx/bench/daystart.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
source nginx/scripts/deps.sh
source nginx/bench/lib.sh

ROUNDS=${ROUNDS:-3}
PROCESSES=${PROCESSES:-4}
DEVICES=${DEVICES:-5000}
BATCH=${BATCH:-16}
BASE_BIN=${BASE_BIN:-}
START=${START:-day}
case "$START" in
  day) PRIMED_AT=2026-12-03T12:00:00Z DAY_START=2026-12-04T00:00:30Z ;;
  month) PRIMED_AT=2026-11-20T12:00:00Z DAY_START=2026-12-01T00:00:30Z ;;
  *) echo "daystart.sh: START is day or month, not $START" >&2; exit 2 ;;
esac

echo "==> release build of this checkout"
for product in attestctl attest-bench; do swift build -c release --product "$product" 2>&1 | tail -1; done
BIN=$PWD/.build/release
DIR=$(mktemp -d /tmp/attestedge-daystart.XXXXXX)
trap 'bench_postgres_stop; rm -rf "$DIR"' EXIT
bench_postgres_start

rollbacks() { psql "$POSTGRES_URL" -Atc "SELECT xact_rollback FROM pg_stat_database WHERE datname = current_database()"; }

# store BIN NAME: a data directory DIR/NAME on a fresh schema, its organization's devices
# 0 ..< PROCESSES × DEVICES counted on PRIMED_AT (one process, large transactions).
store() {
  "$1/attestctl" init --data "$DIR/$2" > /dev/null
  bench_use_postgres "$1" "$DIR/$2"
  $(bench_program "$1") usage --data "$DIR/$2" --devices $((PROCESSES * DEVICES)) --batch 1000 --at "$PRIMED_AT" > /dev/null 2>&1
}

# round BIN LAYOUT: sets RATE (devices/s) and ROLLBACKS.
round() {
  local bin=$1 layout=$2 i pids=() failed=0
  rm -rf "${DIR:?}"/data*
  if [ "$layout" = shared ]; then store "$bin" data; else for i in $(seq 1 "$PROCESSES"); do store "$bin" "data$i"; done; fi
  local r0 t0 t1
  r0=$(rollbacks)
  t0=$(date +%s.%N)
  for i in $(seq 1 "$PROCESSES"); do
    local data=$DIR/data
    [ "$layout" = shared ] || data=$DIR/data$i
    $(bench_program "$bin") usage --data "$data" --from $(((i - 1) * DEVICES)) --devices "$DEVICES" --batch "$BATCH" \
      --at "$DAY_START" > "$DIR/out$i" 2>&1 &
    pids+=($!)
  done
  for i in "${pids[@]}"; do wait "$i" || failed=$((failed + 1)); done
  t1=$(date +%s.%N)
  [ "$failed" = 0 ] || { tail -n 3 "$DIR"/out*; echo "daystart.sh: $failed counting processes failed" >&2; exit 1; }
  RATE=$(awk -v n=$((PROCESSES * DEVICES)) -v a="$t0" -v b="$t1" 'BEGIN { printf "%d", n / (b - a) }')
  ROLLBACKS=$(($(rollbacks) - r0))
}

TRANSACTIONS=$((PROCESSES * ((DEVICES + BATCH - 1) / BATCH)))
printf '%-6s %-10s %12s %10s %10s\n' round build/layout "devices/s" rollbacks "÷ apart"
for r in $(seq 1 "$ROUNDS"); do
  round "$BIN" apart; APART=$RATE
  printf '%-6s %-10s %12s %10s %10s\n' "$r" apart "$RATE" "$ROLLBACKS" ""
  round "$BIN" shared
  printf '%-6s %-10s %12s %10s %10s\n' "$r" shared "$RATE" "$ROLLBACKS" "$(awk -v a="$RATE" -v b="$APART" 'BEGIN { printf "%.2f", a / b }')"
  if [ -n "$BASE_BIN" ]; then
    round "$BASE_BIN" shared
    printf '%-6s %-10s %12s %10s %10s\n' "$r" base-shared "$RATE" "$ROLLBACKS" "$(awk -v a="$RATE" -v b="$APART" 'BEGIN { printf "%.2f", a / b }')"
  fi
done
echo "$PROCESSES processes × $DEVICES devices counted on $PRIMED_AT, each counted again at $DAY_START"
echo "in transactions of $BATCH ($TRANSACTIONS transactions a round); PostgreSQL 15 on this host, $(nproc) cores"
