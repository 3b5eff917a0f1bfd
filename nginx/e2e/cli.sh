#!/usr/bin/env bash
# attestctl as an operator meets it: every command's --help exits 0 with an example; every
# list and show command prints JSON with --json; bad usage exits 2 with the usage text; an
# unknown object names the command that lists what exists.
set -uo pipefail
cd "$(dirname "$0")/../.."
B=${ATTEST_BIN:-$PWD/.build/release}/attestctl
BENCH=${ATTEST_BIN:-$PWD/.build/release}/attest-bench
source nginx/e2e/lib/check.sh
D=$(mktemp -d /tmp/attestedge-cli.XXXXXX)
trap "rm -rf \"$D\"" EXIT
export ATTEST_EDGE_DATA=$D/data

commands=$("$B" help | awk '/^  [a-z]/ {print $1}')
check "attestctl help lists the commands" '[ "$(wc -w <<< "$commands")" -ge 15 ]'
for c in $commands; do
  out=$("$B" "$c" --help 2>&1); rc=$?
  check "$c --help exits 0 with an example" '[ $rc = 0 ] && grep -q "example" <<< "$out"' "$out"
done

"$B" init > /dev/null
"$B" org add acme --tier pro > /dev/null
"$B" app add --org acme --team ABCDE12345 --bundle com.example.app > /dev/null
"$B" apikey create --org acme > /dev/null 2>&1
"$B" subject grant household-1 premium --org acme > /dev/null 2>&1
"$B" claims add --app ABCDE12345.com.example.app --key plan --value '"gold"' > /dev/null 2>&1
# (doctor exits 1 on a stack that is not running: only the output's shape matters here)
json() { local out; out=$("$B" "$@" --json 2>/dev/null); python3 -c 'import json,sys; json.load(sys.stdin)' <<< "$out" 2>/dev/null; }
for cmd in "org list" "app list" "apikey list" "webhooks list" "usage" "usage --org acme" "config show" "keys list" "apple key list" "receipts status" "device list" \
           "store stats" "subject list" "subject show household-1 --org acme" "claims list --app ABCDE12345.com.example.app" "doctor"; do
  check "attestctl $cmd --json prints JSON" "json $cmd"
done

# Every change above is in acme's audit log, by attestctl and the user who ran it (not $USER).
audit=$(USER=mallory "$B" audit --org acme --json 2>&1)
check "attestctl audit lists the CLI's changes (org.add, app.add, apikey.create, subject.grant, claim.add)" \
  'python3 -c "import json,sys; a=[e[\"action\"] for e in json.load(sys.stdin)]; sys.exit(0 if all(x in a for x in [\"org.add\",\"app.add\",\"apikey.create\",\"subject.grant\",\"claim.add\"]) else 1)" <<< "$audit"' "$audit"
check "... each by attestctl and the account that ran it" \
  'python3 -c "import json,sys; a=json.load(sys.stdin); sys.exit(0 if a and all(e[\"actor\"][\"kind\"]==\"cli\" and \"mallory\" not in e[\"actor\"][\"id\"] for e in a) else 1)" <<< "$audit"' "$audit"
link=$("$B" console login --org acme --role editor --name "Sam" 2>/dev/null)
check "console login prints a one-time link to login.html with the token in the fragment" \
  'grep -Eq "^http://[^ ]+/console/login.html#[A-Za-z0-9_-]{43}$" <<< "$link"' "$link"
out=$("$B" console sessions 2>&1)
check "console sessions shows the unused link" 'grep -q "acme/editor for Sam" <<< "$out"' "$out"
out=$("$B" console logout --org acme --all 2>&1)
check "console logout --org --all voids the unused link" 'grep -q "voided 1 unused" <<< "$out"' "$out"
out=$("$B" console login --org nowhere 2>&1); rc=$?
check "console login for an unknown organization exits 1 naming org list" '[ $rc = 1 ] && grep -q "org list" <<< "$out"' "$out"

# org set --tier moves the limits still at the old tier's defaults; limits set by hand stay.
"$B" org add upgraded --tier free > /dev/null
"$B" org add custom --tier free --mad-limit 50 > /dev/null
"$B" org set upgraded --tier enterprise > /dev/null
"$B" org set custom --tier pro > /dev/null
limits=$("$B" org list --json | python3 -c 'import json,sys; print(" ".join("%s:%s:%s" % (o["name"], o["madLimit"], o["ratePerMinute"]) for o in json.load(sys.stdin) if o["name"] in ("upgraded", "custom")))')
check "org set --tier follows the new tier's default limits, keeps ones set by hand" \
  'grep -q "upgraded:0:0" <<< "$limits" && grep -q "custom:50:6000" <<< "$limits"' "$limits"

# doctor looks for the pools' sockets where it is told (--run DIR), as under systemd, where
# they are in /run/attestedge and DATA/run has none: seven listening sockets stand in for them.
S=$D/sockets
mkdir -p "$S"
python3 - "$S" <<'PY' &
import socket, sys, time
held = []
for name in ["challenge", "validate", "refresh", "mad", "webhooks", "monitor", "flags", "feedback", "org"]:
    s = socket.socket(socket.AF_UNIX)
    s.bind(f"{sys.argv[1]}/{name}.sock")
    s.listen(8)
    held.append(s)
open(f"{sys.argv[1]}/ready", "w").close()
time.sleep(30)
PY
holder=$!
for _ in $(seq 100); do [ -e "$S/ready" ] && break; sleep 0.1; done
out=$("$B" doctor --json 2>&1)
check "doctor without the stack names the pools' sockets as the problem" 'grep -q "pool does not accept" <<< "$out"' "$out"
out=$("$B" doctor --run "$S" --json 2>&1)
check "doctor --run DIR finds the pools' sockets there" '! grep -q "pool does not accept" <<< "$out"' "$out"
kill "$holder" 2> /dev/null; wait "$holder" 2> /dev/null

out=$("$B" org frobnicate 2>&1); rc=$?
check "an unknown subcommand exits 2 with the usage" '[ $rc = 2 ] && grep -q "usage: attestctl org" <<< "$out"' "$out"
out=$("$B" device show 00000000000000000000000000000000 2>&1); rc=$?
check "an unknown device exits 1 and says where to look" '[ $rc = 1 ] && grep -q "device list" <<< "$out"' "$out"
out=$("$B" app add --org nosuch --team ABCDE12345 --bundle com.x 2>&1); rc=$?
check "an unknown organization exits 1 and names org list" '[ $rc = 1 ] && grep -q "org list\|org add" <<< "$out"' "$out"
out=$("$B" config set store.sync sometimes 2>&1); rc=$?
check "a bad config value names the key and what it must be" '[ $rc != 0 ] && grep -q "store.sync" <<< "$out" && grep -q "commit" <<< "$out"' "$out"
# The in-process refresh benchmark runs end to end (every refresh must answer 200) and
# reports its parts; the figures themselves are machine-dependent and not judged here.
out=$("$BENCH" refresh --devices 3 --count 12 2>&1); rc=$?
check "bench refresh runs 12 refreshes and splits them into verify, sign and rest" \
  '[ $rc = 0 ] && grep -Eq "^refresh_us=[0-9.]+ verify_us=[0-9.]+ sign_us=[0-9.]+ rest_us=-?[0-9.]+" <<< "$out" && grep -q "12 refreshes over 3 devices" <<< "$out"' "$out"
out=$("$BENCH" refresh --devices 4 --cold 2>&1); rc=$?
check "bench refresh --cold sends one refresh per device" '[ $rc = 0 ] && grep -q "4 refreshes over 4 devices.*keys cold" <<< "$out"' "$out"
# The scaling loader writes its devices, then leaves the durable environment compacted (no
# free pages: its bulk transactions would otherwise make every later commit rewrite the list),
# and the store still passes its check with every device in it.
"$B" org add bulk --tier enterprise > /dev/null
"$B" app add --org bulk --team BULK000001 --bundle com.example.bulk > /dev/null
out=$("$BENCH" store load --count 30000 --app BULK000001.com.example.bulk 2>&1); rc=$?
free=$(mdb_stat -f "$ATTEST_EDGE_DATA/store/durable" 2>/dev/null | awk '/Free pages:/ { print $3 }')
check "bench store load loads 30000 devices and compacts the store (free pages: ${free:-?})" \
  '[ $rc = 0 ] && grep -q "loaded=30000 .*compacted_bytes=[1-9]" <<< "$out" && [ "$free" = 0 ]' "$out"
out=$("$B" store check 2>&1); rc=$?
check "the loaded store passes store check" '[ $rc = 0 ]' "$out"
out=$("$B" device list --app BULK000001.com.example.bulk --json 2>/dev/null | python3 -c 'import json,sys; d=json.load(sys.stdin); print(len(d if isinstance(d, list) else d.get("devices", [])))' 2>&1)
check "the loaded devices are listed after the compaction (at least one page of them)" '[ "${out:-0}" -gt 0 ] 2>/dev/null' "$out"
check_summary cli
