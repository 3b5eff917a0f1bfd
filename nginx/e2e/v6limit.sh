#!/usr/bin/env bash
# nginx's challenge limit counts an IPv6 client by its /64, as the pools' own limits do
# (IPAddress.rateLimitKey; issue 37, item 9): `attestctl serve` on [::1] in a network namespace
# of its own whose loopback carries addresses of two /64s (fd00:37:9:1::/64, fd00:37:9:2::/64;
# unique-local, on that namespace's loopback only), requests sent from each with curl
# --interface. Needs root (unshare -n, ip addr) and the release build; without root it says
# SKIP. Ends with "v6limit: N passed, M failed"; exits 1 on a failure.
set -uo pipefail
cd "$(dirname "$0")/../.."
source nginx/e2e/lib/check.sh
if [ "$(id -u)" != 0 ] || ! unshare -n true 2>/dev/null; then
  echo "SKIP: needs root and network namespaces (unshare -n)"
  check_summary v6limit
  exit 0
fi
D=$(mktemp -d /tmp/attestedge-v6limit.XXXXXX)
chmod 755 "$D"
trap 'rm -rf "$D"' EXIT
CTL=${ATTEST_BIN:-$PWD/.build/release}/attestctl
"$CTL" init --data "$D/data" --test-ca > /dev/null
"$CTL" config set server.listen '[::1]:8080' --data "$D/data" > /dev/null
"$CTL" config set rateLimits.challengePerIPPerSecond 1 --data "$D/data" > /dev/null
"$CTL" config set rateLimits.challengeBurst 3 --data "$D/data" > /dev/null

# Inside the namespace: one line per request, "SOURCE STATUS".
unshare -n bash -s "$CTL" "$D" "$PWD/nginx/conf" > "$D/results" 2> "$D/stderr" <<'INSIDE'
CTL=$1 D=$2 TEMPLATES=$3
ip link set lo up
for a in fd00:37:9:1::a fd00:37:9:1::b fd00:37:9:2::a; do ip -6 addr add "$a/64" dev lo nodad; done
"$CTL" serve --data "$D/data" --nginx-templates "$TEMPLATES" > "$D/serve.out" 2>&1 &
serve=$!
for _ in $(seq 600); do grep -q "AttestEdge is up" "$D/serve.out" && break; sleep 0.1; done
get() { echo "$1 $(curl -s -o /dev/null -w '%{http_code}' --interface "$1" 'http://[::1]:8080/api/v1/attestation/challenge')"; }
# Within one second (the rate is 1/s): a fills its burst and is refused, then b (same /64) and
# c (another /64) ask once each.
for _ in 1 2 3 4 5 6; do get fd00:37:9:1::a; done
get fd00:37:9:1::b
get fd00:37:9:2::a
kill -TERM "$serve"
wait "$serve"
INSIDE

statuses() { awk -v s="$1" '$1 == s { printf "%s ", $2 }' "$D/results"; }
a=$(statuses fd00:37:9:1::a) b=$(statuses fd00:37:9:1::b) c=$(statuses fd00:37:9:2::a)
echo "NOTE: fd00:37:9:1::a: $a; fd00:37:9:1::b: $b; fd00:37:9:2::a: $c"
check "serve came up on [::1] in the namespace" 'grep -q "AttestEdge is up" "$D/serve.out"'
# Served or refused by the pool (no app headers: 400) is "not limited"; nginx's limit is 429.
limited() { grep -o 429 <<< "$1" | wc -l; }
check "one address gets its request and burst (4), then 429" '[ "$(wc -w <<< "$a")" = 6 ] && [ "$(limited "$a")" = 2 ] && [[ "$a" == *"429 429 " ]]'
check "another address of the same /64 shares its bucket (429)" '[ "$b" = "429 " ]'
check "an address of another /64 has its own bucket (not 429)" '[[ "$c" =~ ^[0-9]{3}\ $ ]] && [ "$c" != "429 " ]'
# On a failure, what the namespace saw: each request's status, its stderr and serve's last lines.
[ "$CHECK_FAILED" = 0 ] || { cat "$D/results" "$D/stderr"; tail -20 "$D/serve.out"; }
check_summary v6limit
