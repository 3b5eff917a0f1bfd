#!/usr/bin/env bash
# End-to-end tests of the FastCGI runtime behind real nginx: a temporary directory, nginx on a
# free loopback port with the shipped site.conf, and attest-fcgi-bench pools behind the
# endpoint locations. One PASS/FAIL line per check and a summary; exits non-zero on failure.
# Run by nginx/e2e/run.sh (nginx/scripts/test.sh, after the release build); also on its own:
#   bash nginx/e2e/fastcgi.sh        (KEEP=1 keeps the temporary directory)
set -euo pipefail
cd "$(dirname "$0")/../.."
source nginx/scripts/deps.sh
source nginx/bench/lib.sh
source nginx/e2e/lib/check.sh

# attestctl, which renders nginx's files (bench_render_nginx), comes from the release build
# (nginx/scripts/test.sh makes it first): a second `swift build` here would cost 3 s per run.
swift build -c release --product attest-fcgi-bench 2>&1 | tail -1
BIN=$PWD/.build/release/attest-fcgi-bench

DIR=$(mktemp -d /tmp/attestedge-fcgi-e2e.XXXXXX)
PORT=$(bench_free_port)
finish() {
  bench_cleanup
  if [ "$CHECK_FAILED" -gt 0 ] || [ "${KEEP:-0}" = 1 ]; then echo "logs and configs kept in $DIR"; else rm -rf "$DIR"; fi
}
trap finish EXIT

# --- helpers -------------------------------------------------------------------------------
BASE="http://127.0.0.1:$PORT"
RUN=$DIR/run
LOG=$DIR/logs

# http METHOD PATH [curl args…]: sets STATUS, BODY (file) and HEADERS (file).
N=0
http() {
  local method=$1 path=$2
  shift 2
  N=$((N + 1))
  BODY=$DIR/body.$N
  HEADERS=$DIR/headers.$N
  STATUS=$(curl -s -X "$method" -D "$HEADERS" -o "$BODY" -w '%{http_code}' "$@" "$BASE$path")
}
# parse_json FILE: fills J[key] with the body's top-level values (one python3 run per body);
# returns non-zero if the body is not a JSON object.
declare -A J
parse_json() {
  J=()
  local key value out
  out=$(python3 -c '
import json, sys
body = json.load(open(sys.argv[1]))
assert isinstance(body, dict)
for k, v in body.items():
    print(k + "\t" + ("" if v is None else str(v).replace("\n", " ")))' "$1" 2>/dev/null) || return 1
  while IFS=$'\t' read -r key value; do J[$key]=$value; done <<< "$out"
}
header() { grep -i "^$2:" "$1" | head -1 | cut -d: -f2- | tr -d ' \r'; }
fail() { echo "    $*" >&2; return 1; }
expect_status() { [ "$STATUS" = "$1" ] || fail "expected HTTP $1, got $STATUS: $(head -c 300 "$BODY")"; }
expect_json_error() { # STATUS CODE: the docs/contract.md §3 envelope from nginx or a responder
  expect_status "$1" || return 1
  [ "$(header "$HEADERS" Content-Type)" = application/json ] || fail "Content-Type is not application/json"
  parse_json "$BODY" || fail "body is not a JSON object: $(head -c 200 "$BODY")" || return 1
  [ "${J[code]:-}" = "$2" ] || fail "code is '${J[code]:-}', expected $2"
  [ -n "${J[error]:-}" ] && [ "${J[error]}" = "${J[reason]:-}" ] || fail "error and reason differ or are empty"
  [[ "${J[requestId]:-}" =~ ^[0-9a-f]{32}$ ]] || fail "requestId '${J[requestId]:-}' is not nginx's \$request_id"
}
# access_line ID: the access-log line of a request id (waits briefly for nginx to write it).
access_line() {
  local i
  for i in $(seq 1 40); do
    grep "request_id=$1 " "$LOG/access.log" && return 0
    sleep 0.05
  done
  return 1
}
# wait_for CONDITION-COMMAND…: up to 5 s.
wait_for() {
  local i
  for i in $(seq 1 100); do "$@" && return 0; sleep 0.05; done
  return 1
}
sorted_workers() { bench_workers "$1" | sort | tr '\n' ' '; }

# --- the stack -----------------------------------------------------------------------------
bench_render_nginx "$DIR" "$PORT"
echo '{"keys":[{"kty":"EC","crv":"P-256","kid":"e2e","x":"AA","y":"AA"}]}' > "$DIR/data/jwks.json"
bench_start_nginx "$DIR"
bench_start_pool ECHO "$LOG/echo.log" "$BIN" --mode echo --socket "$RUN/challenge.sock" --workers 2 --body-limit 1024
bench_start_pool TRIVIAL "$LOG/trivial.log" "$BIN" --mode trivial --socket "$RUN/refresh.sock" --workers 2 --body-limit 1024
bench_start_pool VERIFY "$LOG/verify.log" "$BIN" --mode p256-verify --socket "$RUN/mad.sock" --workers 1
bench_start_pool SLOW "$LOG/slow.log" "$BIN" --mode slow --socket "$RUN/webhooks.sock" --workers 1

# --- checks (a failing one is counted, not fatal) --------------------------------------------
set +e
t_trivial() {
  http GET /api/v1/attestation/refresh
  expect_status 200 && [ "$(cat "$BODY")" = '{"ok":true}' ] || fail "body: $(cat "$BODY")"
  [ "$(header "$HEADERS" Content-Type)" = application/json ] || fail "Content-Type: $(header "$HEADERS" Content-Type)"
}
check_cmd "trivial pool: 200 {\"ok\":true} with Content-Type application/json through nginx" t_trivial

t_params() {
  http GET '/api/v1/attestation/challenge?nonce=a%20b&x=1' -H 'X-Bundle-ID: com.example.app'
  expect_status 200 && parse_json "$BODY" || fail "body: $(cat "$BODY")" || return 1
  [ "${J[method]}" = GET ] || fail "method ${J[method]}"
  [ "${J[path]}" = /api/v1/attestation/challenge ] || fail "path ${J[path]}"
  [ "${J[query]}" = 'nonce=a%20b&x=1' ] || fail "query ${J[query]}"
  [ "${J[bundleId]}" = com.example.app ] || fail "X-Bundle-ID arrived as '${J[bundleId]}'"
  [ "${J[remoteAddress]}" = 127.0.0.1 ] || fail "REMOTE_ADDR ${J[remoteAddress]}"
  access_line "${J[requestId]}" | grep -q '"GET /api/v1/attestation/challenge?nonce=a%20b&x=1 HTTP/1.1" 200' \
    || fail "REQUEST_ID ${J[requestId]} is not the access log's request_id" || return 1
  http POST /api/v1/attestation/challenge -H 'Content-Type: application/json' --data-binary '{"bundleId":"com.example.app"}'
  expect_status 200 && parse_json "$BODY" || return 1
  [ "${J[method]}" = POST ] && [ "${J[bodyLength]}" = 30 ] && [ "${J[contentType]}" = application/json ] \
    || fail "POST arrived as $(cat "$BODY")"
}
check_cmd "params arrive: method, path, query, header, REMOTE_ADDR, body, REQUEST_ID = access log id" t_params

t_idle_work() {
  # The echo responder asks for 3 quiet-moment steps after each request (Responder.idle): a
  # worker runs exactly those once nothing is queued, then blocks instead of spinning.
  local first second pid ticks0 ticks1 i
  for i in $(seq 1 20); do
    http GET /api/v1/attestation/challenge
    parse_json "$BODY" || return 1
    first=${J[idleSteps]} pid=${J[pid]}
    sleep 0.3
    http GET /api/v1/attestation/challenge
    parse_json "$BODY" || return 1
    [ "${J[pid]}" = "$pid" ] || continue
    second=${J[idleSteps]}
    [ "$second" = $((first + 3)) ] || fail "idle steps went from $first to $second between two requests (expected +3)" || return 1
    ticks0=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
    sleep 1
    ticks1=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
    [ $((ticks1 - ticks0)) -le 1 ] || fail "an idle worker used $((ticks1 - ticks0)) clock ticks in 1 s" || return 1
    return 0
  done
  fail "no two requests in a row reached the same worker"
}
check_cmd "quiet-moment work: a worker runs the steps its responder asks for after a request, then blocks" t_idle_work

t_socket_mode() {
  [ "$(stat -c %a "$RUN/challenge.sock")" = 660 ] || fail "mode $(stat -c %a "$RUN/challenge.sock")"
}
check_cmd "the socket is created with mode 0660" t_socket_mode

t_nginx_413() {
  head -c 70000 /dev/zero > "$DIR/body70k"
  http POST /api/v1/attestation/challenge --data-binary @"$DIR/body70k"
  expect_json_error 413 payload_too_large || return 1
  http POST /api/v1/attestation/challenge -H 'Expect:' --data-binary @"$DIR/body70k"
  expect_json_error 413 payload_too_large || fail "(without Expect: 100-continue)"
}
check_cmd "a body over nginx's 64k limit: 413 JSON with code and requestId (with and without Expect)" t_nginx_413

t_app_413() {
  local i size
  head -c 2000 /dev/zero > "$DIR/body2k"
  head -c 60000 /dev/zero > "$DIR/body60k"
  for i in $(seq 1 5); do
    for size in 2k 60k; do
      http POST /api/v1/attestation/refresh -H 'Expect:' --data-binary @"$DIR/body$size"
      expect_json_error 413 payload_too_large || fail "($size body, attempt $i)" || return 1
    done
  done
  ! grep -E 'prematurely|reset by peer|broken pipe' "$LOG/error.log" || fail "nginx logged an upstream error"
  http POST /api/v1/attestation/refresh --data-binary @"$DIR/body2k"
  expect_json_error 413 payload_too_large || fail "(with Expect: 100-continue)"
  http POST /api/v1/attestation/refresh -H 'Expect:' --data-binary 'short'
  expect_status 200 || fail "a body under the limit after oversized ones"
}
check_cmd "a body over the responder's --body-limit: its own 413 JSON reaches nginx cleanly (unread body)" t_app_413

t_verify() {
  http GET /api/v1/heartbeat
  expect_status 200 && [ "$(cat "$BODY")" = '{"ok":true}' ] || fail "body: $(cat "$BODY")"
}
check_cmd "p256-verify pool: one ECDSA verify per request, 200" t_verify

# raw_fastcgi MODE: talks FastCGI straight to the trivial pool's socket (no nginx), as a
# hostile or broken peer would; prints what failed and exits non-zero.
raw_fastcgi() {
  python3 - "$RUN/refresh.sock" Tests/FuzzCorpus/fastcgi "$1" <<'PY'
import glob, socket, sys, time
path, corpus, mode = sys.argv[1:4]

def record(kind, rid, content=b""):
    pad = -len(content) % 8
    return bytes([1, kind, rid >> 8, rid & 255, len(content) >> 8, len(content) & 255, pad, 0]) + content + bytes(pad)

def pairs(items):
    return b"".join(bytes([len(n), len(v)]) + n + v for n, v in items)

def replies(data):
    out = []
    while data:
        assert len(data) >= 8 and data[0] == 1, f"malformed reply {data[:16]!r}"
        length, pad = data[4] << 8 | data[5], data[6]
        assert (length + pad) % 8 == 0 and len(data) >= 8 + length + pad, "reply not padded or cut short"
        out.append((data[1], data[2] << 8 | data[3], data[8:8 + length]))
        data = data[8 + length + pad:]
    return out

def exchange(data, close_write=True):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(20)
    s.connect(path)
    s.sendall(data)
    if close_write:
        s.shutdown(socket.SHUT_WR)
    out = b""
    while chunk := s.recv(65536):
        out += chunk
    s.close()
    return out

begin = record(1, 1, bytes([0, 1, 0, 0, 0, 0, 0, 0]))
if mode == "streams":
    for f in sorted(glob.glob(corpus + "/known-libfcgi-*")):
        kinds = [k for k, _, _ in replies(exchange(open(f, "rb").read()))]
        assert all(k == 11 for k in kinds), f"{f}: replies {kinds}"
    values = replies(exchange(record(9, 0, pairs([(b"FCGI_MAX_CONNS", b""), (b"FCGI_MAX_REQS", b""), (b"FCGI_MPXS_CONNS", b"")]))))
    assert [k for k, _, _ in values] == [10], f"GET_VALUES: {values}"
    assert values[0][2] == pairs([(b"FCGI_MAX_CONNS", b"2"), (b"FCGI_MAX_REQS", b"1"), (b"FCGI_MPXS_CONNS", b"0")]), values
    params = pairs([(b"REQUEST_METHOD", b"GET"), (b"DOCUMENT_URI", b"/x")])
    answer = replies(exchange(begin + record(4, 1, params) + record(4, 1) + record(5, 1)))
    assert [k for k, _, _ in answer] == [6, 6, 3] and answer[-1][2] == bytes(8), answer
    assert answer[0][2].startswith(b"Status: 200 OK\r\n") and answer[0][2].endswith(b'{"ok":true}'), answer[0][2]
    refused = replies(exchange(record(1, 1, bytes([0, 2, 0, 0, 0, 0, 0, 0]))))
    assert [(k, c[4]) for k, _, c in refused] == [(3, 3)], f"authorizer role: {refused}"
elif mode == "stall":
    started = time.time()
    out = exchange(begin + record(4, 1, pairs([(b"A", b"b")]))[:12], close_write=False)
    elapsed = time.time() - started
    assert out == b"" and 4 <= elapsed < 9, f"closed after {elapsed:.1f}s with {out!r}"
PY
}

t_raw_streams() {
  local before
  before=$(sorted_workers "$TRIVIAL")
  raw_fastcgi streams || return 1
  [ "$(sorted_workers "$TRIVIAL")" = "$before" ] || fail "workers $before became $(sorted_workers "$TRIVIAL")"
}
check_cmd "raw FastCGI to a pool's socket: the streams that aborted libfcgi, GET_VALUES, a request, another role; no worker dies" t_raw_streams

t_raw_stall() {
  local before
  before=$(sorted_workers "$TRIVIAL")
  raw_fastcgi stall &
  local stalled=$!
  sleep 0.5
  http GET /api/v1/attestation/refresh
  expect_status 200 || fail "the other worker did not answer while one was held" || return 1
  wait "$stalled" || fail "the stalled connection was not closed after the read timeout" || return 1
  grep -q 'dropped a connection without answering: no request bytes' "$LOG/trivial.log" || fail "no log line: $(tail -3 "$LOG/trivial.log")" || return 1
  [ "$(sorted_workers "$TRIVIAL")" = "$before" ] || fail "workers $before became $(sorted_workers "$TRIVIAL")"
}
check_cmd "a peer that stalls mid-record is cut after the 5 s read timeout while the pool keeps answering" t_raw_stall

t_kill_worker() {
  local before victim survivor after new i
  before=$(sorted_workers "$ECHO")
  victim=${before%% *}
  survivor=${before#* }
  survivor=${survivor%% *}
  kill -9 "$victim"
  replaced() { after=$(sorted_workers "$ECHO"); [ "$(wc -w <<< "$after")" = 2 ] && ! grep -qw "$victim" <<< "$after"; }
  wait_for replaced || fail "workers after kill -9 $victim: $(sorted_workers "$ECHO")" || return 1
  new=$(comm -13 <(tr ' ' '\n' <<< "$before" | sort) <(tr ' ' '\n' <<< "$after" | sort) | tr -d '\n')
  [ -n "$new" ] || fail "no new worker pid (before: $before, after: $after)" || return 1
  grep -q "worker $victim killed by signal 9; restarting" "$LOG/echo.log" || fail "no restart line in the pool log" || return 1
  for i in 1 2 3; do
    http GET /api/v1/attestation/challenge
    expect_status 200 || return 1
  done
  # Idle workers are woken in a fixed order, so pause the survivor to see the newcomer serve.
  kill -STOP "$survivor"
  http GET /api/v1/attestation/challenge
  kill -CONT "$survivor"
  expect_status 200 && parse_json "$BODY" || return 1
  [ "${J[pid]}" = "$new" ] || fail "answered by ${J[pid]}, expected the new worker $new"
}
check_cmd "kill -9 of a worker: the master forks a replacement (new pid) and the endpoint keeps answering" t_kill_worker

t_crash_backoff() {
  local i attempt mark lines
  has_worker() { [ -n "$(bench_workers "$VERIFY")" ]; }
  # The first kill finds a worker that lived long (restart at once); each further kill hits a
  # worker younger than a second, so the delay doubles. On a loaded box a replacement can
  # outlive a second before the next kill reaches it, which rightly resets the backoff: then
  # the sequence is tried again (at most 3 times) from a worker that has lived long, and only
  # the log lines of that attempt count.
  for attempt in 1 2 3; do
    mark=$(wc -l < "$LOG/verify.log")
    for i in 1 2 3 4; do
      wait_for has_worker || fail "no replacement after kill $((i - 1))" || return 1
      kill -9 $(bench_workers "$VERIFY")
      sleep 0.02
    done
    wait_for has_worker || fail "no replacement after the last kill" || return 1
    lines=$(tail -n +"$((mark + 1))" "$LOG/verify.log" | grep -o 'restarting in [0-9.]* s' | tr '\n' ' ')
    [[ "$lines" == *"restarting in 0.1 s restarting in 0.2 s restarting in 0.4 s"* ]] && break
    echo "    attempt $attempt: the backoff was reset by a slow kill ($lines); trying again"
    [ "$attempt" = 3 ] && { fail "no doubling backoff in 3 attempts: $lines"; return 1; }
    sleep 1.2
  done
  http GET /api/v1/heartbeat
  expect_status 200
}
check_cmd "a worker that dies right after starting is restarted with a doubling backoff (0.1, 0.2, 0.4 s)" t_crash_backoff

t_reload() {
  local before after
  before=$(sorted_workers "$ECHO")
  kill -HUP "$ECHO"
  disjoint() { after=$(sorted_workers "$ECHO"); [ "$(wc -w <<< "$after")" = 2 ] && [ -z "$(comm -12 <(tr ' ' '\n' <<< "$before" | sort) <(tr ' ' '\n' <<< "$after" | sort) | tr -d '\n')" ]; }
  wait_for disjoint || fail "workers before SIGHUP: $before, after: $(sorted_workers "$ECHO")" || return 1
  http GET /api/v1/attestation/challenge
  expect_status 200
}
check_cmd "SIGHUP replaces every worker and the endpoint keeps answering" t_reload

t_graceful() {
  local status=0 worker fds c
  worker=$(bench_workers "$SLOW")
  fds=$(ls "/proc/$worker/fd" | wc -l)
  # Two clients at once: the one worker takes the first, the second waits in the backlog.
  for c in 1 2; do
    curl -s -o "$DIR/slow$c.body" -w '%{http_code}' "$BASE/api/v1/org/webhooks" > "$DIR/slow$c.status" &
    eval "client$c=\$!"
  done
  in_flight() { [ "$(ls "/proc/$worker/fd" 2>/dev/null | wc -l)" -gt "$fds" ]; }
  wait_for in_flight || fail "the slow request never reached the worker" || return 1
  sleep 0.2
  kill -TERM "$SLOW"
  wait "$SLOW" || status=$?
  wait "$client1" "$client2" || true
  for c in 1 2; do
    [ "$(cat "$DIR/slow$c.status")" = 200 ] && [ "$(cat "$DIR/slow$c.body")" = '{"ok":true}' ] \
      || fail "request $c got $(cat "$DIR/slow$c.status"): $(cat "$DIR/slow$c.body")" || return 1
  done
  [ "$status" = 0 ] || fail "master exited with $status" || return 1
  [ ! -e "$RUN/webhooks.sock" ] || fail "socket file left behind" || return 1
  grep -q 'SIGTERM: stopping 1 workers' "$LOG/slow.log" && grep -q 'worker stopping after 2 requests' "$LOG/slow.log" \
    || fail "pool log: $(cat "$LOG/slow.log")"
}
check_cmd "SIGTERM with one slow request in flight and one queued: both complete with 200, master exits 0, socket removed" t_graceful

t_grace_bound() {
  local pool worker fds status=0 t0 elapsed
  bench_start_pool pool "$LOG/hung.log" "$BIN" --mode slow --socket "$RUN/validate.sock" --workers 1 --shutdown-grace 1 || return 1
  worker=$(bench_workers "$pool")
  fds=$(ls "/proc/$worker/fd" | wc -l)
  curl -s -o "$DIR/hung.body" -w '%{http_code}' "$BASE/api/v1/attestation/validate" > "$DIR/hung.status" &
  local client=$!
  in_flight() { [ "$(ls "/proc/$worker/fd" 2>/dev/null | wc -l)" -gt "$fds" ]; }
  wait_for in_flight || fail "the request never reached the worker" || return 1
  kill -STOP "$worker"   # a request that will not finish
  t0=$(date +%s%N)
  kill -TERM "$pool"
  wait "$pool" || status=$?
  elapsed=$(( ($(date +%s%N) - t0) / 1000000 ))
  wait "$client" || true
  [ "$status" = 1 ] || fail "master exited with $status, expected 1 (a worker was killed)" || return 1
  [ "$elapsed" -ge 900 ] && [ "$elapsed" -lt 4000 ] || fail "stop took $elapsed ms with a 1 s grace" || return 1
  grep -q 'grace of 1 s over: killing 1 workers' "$LOG/hung.log" || fail "$(cat "$LOG/hung.log")" || return 1
  [ "$(cat "$DIR/hung.status")" = 502 ] || fail "the killed request got $(cat "$DIR/hung.status")" || return 1
  [ ! -e "$RUN/validate.sock" ] || fail "socket file left behind"
}
check_cmd "a request that never finishes: the worker is killed when --shutdown-grace runs out, master exits 1" t_grace_bound

t_502() {
  http GET /api/v1/org/webhooks
  expect_json_error 502 unavailable || return 1
  ! grep -qi '<html' "$BODY" || fail "HTML body"
  local rid line
  rid=${J[requestId]}
  line=$(access_line "$rid") || fail "no access log line with request_id=$rid" || return 1
  grep -q '" 502 ' <<< "$line" || fail "access log line: $line"
}
check_cmd "a stopped pool: nginx answers 502 as JSON and its requestId is the access log line's" t_502

t_stale_socket() {
  local workers pid
  workers=$(bench_workers "$TRIVIAL")
  kill -9 "$TRIVIAL"
  wait "$TRIVIAL" 2>/dev/null || true
  gone() { for pid in $workers; do kill -0 "$pid" 2>/dev/null && return 1; done; return 0; }
  wait_for gone || fail "workers $workers outlived their master" || return 1
  [ -S "$RUN/refresh.sock" ] || fail "expected a stale socket file" || return 1
  bench_start_pool TRIVIAL "$LOG/trivial2.log" "$BIN" --mode trivial --socket "$RUN/refresh.sock" --workers 1 || return 1
  http GET /api/v1/attestation/refresh
  expect_status 200
}
check_cmd "master killed with -9: its workers exit (parent-death signal); a new pool replaces the stale socket" t_stale_socket

t_socket_in_use() {
  local status=0
  "$BIN" --mode trivial --socket "$RUN/challenge.sock" --workers 1 2> "$LOG/second.log" || status=$?
  [ "$status" = 1 ] || fail "second pool exited with $status" || return 1
  grep -q 'is in use' "$LOG/second.log" || fail "$(cat "$LOG/second.log")" || return 1
  http GET /api/v1/attestation/challenge
  expect_status 200
}
check_cmd "a second pool on a live socket refuses to start and leaves the first one serving" t_socket_in_use

t_404() {
  http GET /api/v1/nope
  expect_json_error 404 not_found
}
check_cmd "unknown path: 404 JSON not_found" t_404

t_jwks() {
  local path
  for path in /.well-known/jwks.json /api/v1/attestation/public-key; do
    http GET "$path"
    expect_status 200 || return 1
    [ "$(header "$HEADERS" Content-Type)" = application/json ] || fail "$path Content-Type $(header "$HEADERS" Content-Type)" || return 1
    [ "$(header "$HEADERS" Cache-Control)" = "public,max-age=300" ] || fail "$path Cache-Control $(header "$HEADERS" Cache-Control)" || return 1
    cmp -s "$BODY" "$DIR/data/jwks.json" || fail "$path body differs from jwks.json" || return 1
  done
}
check_cmd "JWKS served from the data directory at both paths, application/json, Cache-Control max-age=300" t_jwks

t_429() {
  local i attempt
  for i in $(seq 1 40); do echo "url = $BASE/api/v1/attestation/challenge"; done > "$DIR/urls"
  # The bucket refills one request per 100 ms: on a loaded box the request after the flood can
  # find a fresh token, so flood again (at most 3 times) until it is the one refused.
  for attempt in 1 2 3; do
    curl -s -o /dev/null -w '%{http_code}\n' -K "$DIR/urls" > "$DIR/codes"
    grep -q 429 "$DIR/codes" || fail "no 429 in 40 quick requests: $(sort "$DIR/codes" | uniq -c | tr '\n' ' ')" || return 1
    http GET /api/v1/attestation/challenge
    [ "$STATUS" = 429 ] && break
  done
  expect_json_error 429 rate_limited || return 1
  [ "$(header "$HEADERS" Retry-After)" = 1 ] || fail "Retry-After '$(header "$HEADERS" Retry-After)'"
}
check_cmd "challenge flood from one IP: 429 JSON rate_limited with Retry-After" t_429

t_clean_stop() {
  local status=0
  bench_stop_pool "$ECHO" || status=$?
  [ "$status" = 0 ] || fail "echo master exited with $status" || return 1
  [ ! -e "$RUN/challenge.sock" ] || fail "socket file left behind" || return 1
  [ -z "$(bench_workers "$ECHO")" ] || fail "workers left"
}
check_cmd "SIGTERM on an idle pool: master exits 0 and removes its socket" t_clean_stop

bench_stop_nginx
check_summary fastcgi
