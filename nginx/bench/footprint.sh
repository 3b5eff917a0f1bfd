#!/usr/bin/env bash
# Footprint (issue: operations): binary sizes, and the memory of the whole stack under
# attestctl serve (2 workers per pool) idle and under load: RSS per process (what top shows;
# it counts shared library pages in every process) and PSS (shared pages divided among the
# processes sharing them: the sum is what the stack really occupies). Prints numbers, asserts
# nothing; not part of the test suite.
#   bash nginx/bench/footprint.sh            # the release build
#   STATIC=1 bash nginx/bench/footprint.sh   # also a --static-swift-stdlib build (.build/static)
set -euo pipefail
cd "$(dirname "$0")/../.."
source nginx/scripts/deps.sh
BINARIES=(attestctl attest-challenge attest-validate attest-refresh attest-mad attest-webhooks attest-monitor attest-flags attest-feedback attest-org attest-receipts attest-device)

echo "==> release build"
swift build -c release 2>&1 | tail -1
BIN=$PWD/.build/release
if [ "${STATIC:-0}" = 1 ]; then
  echo "==> static-stdlib release build (.build/static)"
  swift build -c release --static-swift-stdlib --build-path .build/static 2>&1 | tail -1
fi

echo
echo "binary sizes (stripped size in brackets)"
printf '%-18s %14s %14s\n' binary "dynamic" "$([ "${STATIC:-0}" = 1 ] && echo static-stdlib)"
for b in "${BINARIES[@]}"; do
  d=$(stat -c %s "$BIN/$b"); ds=$(strip -o /tmp/footprint-strip "$BIN/$b" && stat -c %s /tmp/footprint-strip)
  s=""
  if [ "${STATIC:-0}" = 1 ]; then
    s=$(stat -c %s ".build/static/release/$b"); ss=$(strip -o /tmp/footprint-strip ".build/static/release/$b" && stat -c %s /tmp/footprint-strip)
    s="$((s / 1024)) KiB [$((ss / 1024))]"
  fi
  printf '%-18s %14s %14s\n' "$b" "$((d / 1024)) KiB [$((ds / 1024))]" "$s"
done
rm -f /tmp/footprint-strip
echo "shared libraries of a pool: $(ldd "$BIN/attest-refresh" | awk '/=>/ {print $1}' | tr '\n' ' ')"

measure() {  # measure LABEL BIN: starts serve from BIN, prints per-process RSS/PSS idle and loaded
  local label=$1 bin=$2 dir port serve pids
  dir=$(mktemp -d /tmp/attestedge-footprint.XXXXXX); chmod 755 "$dir"
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  "$bin/attestctl" init --data "$dir/data" --test-ca > /dev/null
  "$bin/attestctl" config set rateLimits.challengePerIPPerSecond 1000000 --data "$dir/data" > /dev/null
  "$bin/attestctl" serve --data "$dir/data" --listen "127.0.0.1:$port" --workers 2 --nginx-templates nginx/conf > "$dir/serve.out" 2>&1 &
  serve=$!
  for _ in $(seq 1 100); do grep -q "AttestEdge is up" "$dir/serve.out" && break; sleep 0.1; done
  sleep 2
  pids() { echo "$serve"; for c in $(pgrep -P "$serve"); do echo "$c"; pgrep -P "$c" || true; done; }
  table() {
    local tr=0 tp=0 p r s
    printf '  %-8s %-24s %9s %9s\n' pid process "RSS KiB" "PSS KiB"
    for p in $(pids); do
      [ -r "/proc/$p/smaps_rollup" ] || continue
      r=$(awk '/^Rss:/ {print $2}' "/proc/$p/smaps_rollup"); s=$(awk '/^Pss:/ {print $2}' "/proc/$p/smaps_rollup")
      local role=""
      if [ "$p" = "$serve" ]; then role=" (serve)"
      elif [ "$(awk '/^PPid/ {print $2}' "/proc/$p/status")" != "$serve" ]; then role=" worker"; fi
      printf '  %-8s %-24s %9s %9s\n' "$p" "$(tr -d '\n' < "/proc/$p/comm")$role" "$r" "$s"
      tr=$((tr + r)); tp=$((tp + s))
    done
    printf '  %-33s %9s %9s\n' "whole stack" "$tr" "$tp"
  }
  echo
  echo "$label: idle, 2 workers per pool"
  table
  "$bin/attest-device" --server "http://127.0.0.1:$port" --team DEMOTEAM01 --bundle com.example.demo --state "$dir/dev.json" \
    --test-ca "$dir/data/test-ca/ca.pem" enroll > /dev/null 2>&1 || true
  wrk -t2 -c16 -d6s -H "X-Bundle-ID: com.example.demo" -H "X-Team-ID: DEMOTEAM01" "http://127.0.0.1:$port/api/v1/attestation/challenge" > /dev/null &
  wrk -t1 -c8 -d6s -s <(printf 'wrk.method="POST"\nwrk.body="{}"\nwrk.headers["Content-Type"]="application/json"\nwrk.headers["X-Bundle-ID"]="com.example.demo"\nwrk.headers["X-Team-ID"]="DEMOTEAM01"\n') \
    "http://127.0.0.1:$port/api/v1/attestation/refresh" > /dev/null &
  sleep 4
  echo "$label: under load (wrk on challenge and refresh)"
  table
  wait %2 %3 2>/dev/null || true
  kill "$serve"; wait "$serve" 2>/dev/null || true
  rm -rf "$dir"
}
measure "dynamic build" "$BIN"
if [ "${STATIC:-0}" = 1 ]; then
  measure "static-stdlib build" "$PWD/.build/static/release"
fi
