#!/usr/bin/env bash
# Reusable pieces for AttestEdge's benchmark and end-to-end scripts: source it, then call the
# bench_* functions. Everything it starts is a child of the calling script and is recorded, so
# `trap bench_cleanup EXIT` stops whatever is still running.
#
#   bench_root                          the repository root
#   bench_free_port                     a free TCP port on 127.0.0.1
#   bench_median                        the median of the numbers on stdin (spaces or lines), %.2f
#   bench_data BIN DATA TEAM BUNDLE ["KEY VALUE"…]
#                                       a benchmark's data directory: attestctl init (with the
#                                       test CA), each setting, org "bench" (enterprise) and the
#                                       app TEAM.BUNDLE in it (empty settings are skipped)
#   bench_render_nginx DIR PORT         nginx.conf, site.conf, fastcgi_params in DIR/conf, rendered
#                                       by `attestctl site` (BENCH_ATTESTCTL, default the release
#                                       build's) for an nginx of its own on 127.0.0.1:PORT: sockets
#                                       in DIR/run, logs in DIR/logs, DIR/data/jwks.json served, the
#                                       challenge limit from DIR/data's configuration (a data
#                                       directory made here when DIR/data has none: default 10/s,
#                                       burst 20). Then edits of the rendered copy only:
#                                       BENCH_NO_RATE_LIMIT=1 drops the challenge rate limit;
#                                       BENCH_FLOOR_LOCATIONS=1 adds /bench-floor/{challenge,validate,refresh,refresh-sign};
#                                       BENCH_CLIENT_ADDRESSES=1 trusts X-Forwarded-For from loopback)
#   bench_start_nginx DIR               nginx in the foreground as a child; waits until it answers
#   bench_stop_nginx                    graceful stop (SIGQUIT), then wait
#   bench_start_pool VAR LOG BIN ARGS…  start a FastCGI pool (BIN ARGS… must include --socket);
#                                       VAR receives the master's pid; waits for its workers
#   bench_stop_pool PID                 SIGTERM, wait; returns the master's exit status
#   bench_workers PID                   the worker pids of a pool master, one a line
#   bench_rss_kib PID                   resident memory of a process, KiB
#   bench_wrk URL THREADS CONNS SECS [MASTER]
#                                       run wrk; sets BENCH_RPS (requests/s) and, with MASTER,
#                                       BENCH_LOADED_RSS (each worker's RSS in KiB, mid-run);
#                                       extra wrk arguments (headers, -s script) from the
#                                       array BENCH_WRK_EXTRA; wrk's output in BENCH_WRK_OUT
#   bench_pool_cpu_ms PID               CPU time (user + system, ms) used so far by a pool's workers
#   bench_requests                      requests wrk completed in the last bench_wrk run
#   bench_cleanup                       stop everything started here that is still running
#   bench_postgres_start                a throwaway PostgreSQL cluster (nginx/scripts/postgres.sh)
#                                       unless POSTGRES_URL is set; sets POSTGRES_URL
#   bench_postgres_stop                 destroy that cluster (call it from the EXIT trap)
#   bench_use_postgres BIN DATA         point DATA's store at a fresh schema of POSTGRES_URL
#                                       (store.backend postgres)
#   bench_program BIN                   how build BIN runs the in-process benchmarks: BIN/attest-bench,
#                                       or `BIN/attestctl bench` in builds before it (BASE_BIN)
set -euo pipefail

BENCH_CHILDREN=()
BENCH_NGINX_PID=""
BENCH_NGINX_PORT=""
BENCH_RPS=""
BENCH_LOADED_RSS=""
BENCH_WRK_EXTRA=()
BENCH_WRK_OUT=""
BENCH_PGDIR=""

bench_root() { cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd; }

bench_free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

bench_program() {
  if [ -x "$1/attest-bench" ]; then echo "$1/attest-bench"; else echo "$1/attestctl bench"; fi
}

bench_median() {
  tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { printf "%.2f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

bench_data() {
  local bin=$1 data=$2 team=$3 bundle=$4 kv
  shift 4
  "$bin/attestctl" init --data "$data" --test-ca > /dev/null
  for kv in "$@"; do
    [ -n "$kv" ] || continue
    "$bin/attestctl" config set $kv --data "$data" > /dev/null
  done
  "$bin/attestctl" org add bench --tier enterprise --data "$data" > /dev/null
  "$bin/attestctl" app add --org bench --team "$team" --bundle "$bundle" --data "$data" > /dev/null
}

bench_render_nginx() {
  local dir=$1 port=$2 ctl=${BENCH_ATTESTCTL:-$(bench_root)/.build/release/attestctl}
  [ -x "$ctl" ] || { echo "bench_render_nginx: $ctl is missing: build it first (swift build -c release)" >&2; return 1; }
  mkdir -p "$dir/conf" "$dir/logs" "$dir/run" "$dir/data"
  [ -f "$dir/data/config.json" ] || "$ctl" init --data "$dir/data" > /dev/null
  "$ctl" site --out "$dir/conf" --run-dir "$dir/run" --log-dir "$dir/logs" --listen "127.0.0.1:$port" \
    --metrics-listen "127.0.0.1:$(bench_free_port)" --data "$dir/data" --nginx-templates "$(bench_root)/nginx/conf" > /dev/null
  if [ "${BENCH_NO_RATE_LIMIT:-0}" = 1 ]; then
    sed -i '/^[[:space:]]*limit_req zone=/d' "$dir/conf/site.conf"
  fi
  # Benchmark floors beside the endpoints (the rendered copy only): /bench-floor/NAME goes to
  # RUN_DIR/floor-NAME.sock for challenge, validate, refresh and refresh-sign (fixed upstreams, as the
  # endpoints have), so a floor handler and an endpoint's pool run side by side.
  if [ "${BENCH_FLOOR_LOCATIONS:-0}" = 1 ]; then
    local floors="" name
    for name in challenge validate refresh refresh-sign; do
      floors+="    location = /bench-floor/$name {\n        fastcgi_pass unix:$dir/run/floor-$name.sock;\n    }\n"
    done
    sed -i "0,/^    location = \/api\/v1\/attestation\/challenge {/s||$floors&|" "$dir/conf/site.conf"
  fi
  # BENCH_CLIENT_ADDRESSES=1: nginx takes the client address from X-Forwarded-For when the
  # connection comes from loopback (the realip module), so a replay can speak for many clients
  # (replay.lua's CLIENTS, BENCH_REPLAY_CLIENTS) and per-IP rate limits see them apart.
  if [ "${BENCH_CLIENT_ADDRESSES:-0}" = 1 ]; then
    sed -i "0,/^    location = \/api\/v1\/attestation\/challenge {/s||    set_real_ip_from 127.0.0.1;\n    real_ip_header X-Forwarded-For;\n&|" "$dir/conf/site.conf"
  fi
  BENCH_NGINX_PORT=$port
}

bench_start_nginx() {
  local dir=$1 i
  nginx -t -q -p "$dir/run" -c "$dir/conf/nginx.conf" -e "$dir/logs/error.log"
  nginx -p "$dir/run" -c "$dir/conf/nginx.conf" -e "$dir/logs/error.log" &
  BENCH_NGINX_PID=$!
  BENCH_CHILDREN+=("$BENCH_NGINX_PID")
  for i in $(seq 1 100); do
    if curl -s -o /dev/null "http://127.0.0.1:$BENCH_NGINX_PORT/"; then return 0; fi
    kill -0 "$BENCH_NGINX_PID" 2>/dev/null || { echo "nginx exited; see $dir/logs/error.log" >&2; return 1; }
    sleep 0.05
  done
  echo "nginx did not answer on port $BENCH_NGINX_PORT" >&2
  return 1
}

bench_stop_nginx() {
  [ -n "$BENCH_NGINX_PID" ] || return 0
  kill -QUIT "$BENCH_NGINX_PID" 2>/dev/null || true
  wait "$BENCH_NGINX_PID" 2>/dev/null || true
  BENCH_NGINX_PID=""
}

bench_start_pool() {
  local var=$1 log=$2 bin=$3 socket="" workers=2 i pid
  shift 3
  local args=("$@")
  for ((i = 0; i < ${#args[@]}; i++)); do
    case ${args[i]} in
      --socket) socket=${args[i + 1]} ;;
      --socket=*) socket=${args[i]#--socket=} ;;
      --workers) workers=${args[i + 1]} ;;
      --workers=*) workers=${args[i]#--workers=} ;;
    esac
  done
  "$bin" "${args[@]}" 2>>"$log" &
  pid=$!
  BENCH_CHILDREN+=("$pid")
  printf -v "$var" '%s' "$pid"
  for i in $(seq 1 200); do
    if [ -S "$socket" ] && [ "$(bench_workers "$pid" | wc -l)" -ge "$workers" ]; then return 0; fi
    kill -0 "$pid" 2>/dev/null || { echo "pool $bin exited; see $log" >&2; return 1; }
    sleep 0.05
  done
  echo "pool $bin did not start $workers workers on $socket; see $log" >&2
  return 1
}

bench_stop_pool() {
  local pid=$1 status=0
  kill -TERM "$pid" 2>/dev/null || return 0
  wait "$pid" || status=$?
  return "$status"
}

bench_workers() {
  ps -o pid= --ppid "$1" 2>/dev/null | tr -d ' ' || true
}

bench_rss_kib() {
  awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0
}

bench_wrk() {
  local url=$1 threads=$2 conns=$3 secs=$4 master=${5:-} out pid w
  out=$(mktemp)
  wrk -t"$threads" -c"$conns" -d"${secs}s" "${BENCH_WRK_EXTRA[@]}" "$url" > "$out" 2>&1 &
  pid=$!
  BENCH_LOADED_RSS=""
  if [ -n "$master" ]; then
    sleep "$(awk -v s="$secs" 'BEGIN { print s / 2 }')"
    for w in $(bench_workers "$master"); do BENCH_LOADED_RSS+="$(bench_rss_kib "$w") "; done
    BENCH_LOADED_RSS=${BENCH_LOADED_RSS% }
  fi
  wait "$pid" || { cat "$out" >&2; rm -f "$out"; return 1; }
  BENCH_RPS=$(awk '/^Requests\/sec:/ { print $2 }' "$out")
  BENCH_WRK_OUT=$(cat "$out")
  if grep -q 'Non-2xx' "$out"; then
    echo "warning: wrk saw non-2xx responses: $(grep 'Non-2xx' "$out")" >&2
  fi
  rm -f "$out"
  [ -n "$BENCH_RPS" ] || { printf 'wrk reported no rate for %s:\n%s\n' "$url" "$BENCH_WRK_OUT" >&2; return 1; }
}

bench_pool_cpu_ms() {
  local total=0 w ticks
  for w in $(bench_workers "$1"); do
    ticks=$(awk '{ print $14 + $15 }' "/proc/$w/stat" 2>/dev/null || echo 0)
    total=$((total + ticks))
  done
  echo $((total * 1000 / $(getconf CLK_TCK)))
}

bench_requests() {
  awk '/requests in/ { print $1 }' <<< "$BENCH_WRK_OUT"
}

bench_cleanup() {
  local pid i
  for pid in "${BENCH_CHILDREN[@]}"; do
    kill -0 "$pid" 2>/dev/null && kill -TERM "$pid" 2>/dev/null || true
  done
  for i in $(seq 1 40); do
    local alive=0
    for pid in "${BENCH_CHILDREN[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && break
    sleep 0.05
  done
  for pid in "${BENCH_CHILDREN[@]}"; do
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
  done
  wait 2>/dev/null || true
  BENCH_CHILDREN=()
}

bench_postgres_start() {
  [ -z "${POSTGRES_URL:-}" ] || return 0
  BENCH_PGDIR=$(mktemp -d /tmp/attestedge-bench-pg.XXXXXX)
  POSTGRES_URL=$(bash "$(bench_root)/nginx/scripts/postgres.sh" start "$BENCH_PGDIR")
  echo "==> PostgreSQL for the run: $POSTGRES_URL"
}

bench_postgres_stop() {
  [ -n "$BENCH_PGDIR" ] || return 0
  bash "$(bench_root)/nginx/scripts/postgres.sh" destroy "$BENCH_PGDIR" > /dev/null 2>&1 || true
  BENCH_PGDIR=""
}

bench_use_postgres() {
  local schema=bench_$RANDOM$RANDOM
  psql "$POSTGRES_URL" -qc "CREATE SCHEMA $schema"
  "$1/attestctl" config set store.postgres.url "$POSTGRES_URL options='-c search_path=$schema'" --data "$2" > /dev/null
  "$1/attestctl" config set store.backend postgres --data "$2" > /dev/null
}

# bench_replay URL BODIES THREADS CONNS BUNDLE TEAM [MARKER]: send every line of BODIES once with
# nginx/bench/replay.lua (a 200 counts as ok when it holds the JSON key MARKER, default token); sets BENCH_REPLAY_OK, BENCH_REPLAY_FAILED, BENCH_REPLAY_LOST,
# BENCH_REPLAY_RPS (successes per second from the first request sent to the last answer),
# BENCH_REPLAY_IDLE (idle polls of finished threads, counted in wrk's latencies) and
# BENCH_REPLAY_P50 / BENCH_REPLAY_P99 (ms, wrk's latency distribution; wrk is stopped with
# SIGINT so that it prints it). BENCH_REPLAY_CLIENTS=N (default 0): the bodies speak for N
# client addresses in X-Forwarded-For (replay.lua; needs BENCH_CLIENT_ADDRESSES=1 at render).
bench_replay() {
  local url=$1 bodies=$2 threads=$3 conns=$4 bundle=$5 team=$6 marker=${7:-token} out pid i lines
  out=$(mktemp)
  wrk -t"$threads" -c"$conns" -d600s --timeout 30s --latency -s "$(bench_root)/nginx/bench/replay.lua" "$url" -- "$bodies" "$threads" "$bundle" "$team" "$marker" "${BENCH_REPLAY_CLIENTS:-0}" > "$out" 2>&1 &
  pid=$!
  BENCH_CHILDREN+=("$pid")
  # Polled every 0.25 s: at 0.05 s this loop's grep and sleep took ~5% of a 2-core box from
  # the load it measures (perf -a). The rate is timed by replay.lua, not by this loop.
  for i in $(seq 1 2400); do
    lines=$(grep -c '^REPLAY ' "$out" || true)
    [ "$lines" -ge "$threads" ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.25
  done
  kill -INT "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  if [ "$(grep -c '^REPLAY ' "$out" || true)" -lt "$threads" ]; then
    echo "bench_replay: wrk did not finish:" >&2; cat "$out" >&2; rm -f "$out"; return 1
  fi
  read -r BENCH_REPLAY_OK BENCH_REPLAY_FAILED BENCH_REPLAY_LOST BENCH_REPLAY_RPS < <(awk '
    /^REPLAY / {
      for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
      ok += v["ok"]; failed += v["failed"]; lost += v["lost"]
      if (first == "" || v["first"] < first) first = v["first"]
      if (v["last"] > last) last = v["last"]
    }
    END { printf "%d %d %d %.1f\n", ok, failed, lost, ok / (last - first) }' "$out")
  BENCH_REPLAY_IDLE=$(awk '/^REPLAY / { for (i = 2; i <= NF; i++) if ($i ~ /^idle=/) { sub("idle=", "", $i); n += $i } } END { print n + 0 }' "$out")
  BENCH_REPLAY_P50=$(bench_latency_ms 50 < "$out")
  BENCH_REPLAY_P99=$(bench_latency_ms 99 < "$out")
  rm -f "$out"
}

# bench_latency_ms PCT < WRK_OUTPUT: the PCT% line of wrk's --latency distribution, in ms.
bench_latency_ms() {
  awk -v p="$1%" '$1 == p { v = $2; u = v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v)
    printf "%.2f\n", (u == "us" ? v / 1000 : u == "s" ? v * 1000 : u == "m" ? v * 60000 : v); found = 1 }
    END { if (!found) print "n/a" }'
}
