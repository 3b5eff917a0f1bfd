#!/usr/bin/env bash
# nginx/deploy/install.sh against a temporary prefix: what it writes, nginx -t on the written site,
# systemd-analyze verify on the units (where available), a second run changes nothing, an
# upgrade re-installs only what changed, uninstall.sh removes its files and keeps the data.
# As root, also what the service user can plant in DATA (issue 37): links to root's files, a
# server.listen with nginx syntax in it; root must do nothing with either.
set -uo pipefail
cd "$(dirname "$0")/../.."
source nginx/e2e/lib/check.sh
P=$(mktemp -d /tmp/attestedge-install.XXXXXX)
trap 'rm -rf "$P"' EXIT
chmod 755 "$P"

# As Debian's nginx.conf: 768 worker_connections, too few for the flag streams.
mkdir -p "$P/etc/nginx"
printf 'events {\n\tworker_connections 768;\n}\n' > "$P/etc/nginx/nginx.conf"
out1=$(bash nginx/deploy/install.sh --prefix "$P" --data "$P/data" --no-build 2>&1); rc1=$?
check "install.sh warns that Debian's 768 worker_connections are too few for flag streams" \
  'grep -q "allows 768 worker_connections" <<< "$out1"' "$(grep -i worker_conn <<< "$out1")"
rm -f "$P/etc/nginx/nginx.conf"
check "install.sh into a temporary prefix exits 0" '[ $rc1 = 0 ]' || echo "$out1" | tail -20
for f in bin/attestctl bin/attest-challenge bin/attest-validate bin/attest-refresh bin/attest-mad bin/attest-webhooks bin/attest-monitor \
         etc/nginx/attestedge/site.conf etc/nginx/attestedge/fastcgi_params etc/systemd/system/attestedge@.service \
         etc/systemd/system/attestedge-deliver.service etc/systemd/system/attestedge-receipts.service bin/attest-receipts \
         etc/systemd/system/attestedge.target share/attestedge/manifest bin/attest-flags bin/attest-feedback bin/attest-org \
         etc/systemd/system/nginx.service.d/attestedge.conf; do
  check "it wrote $f" "[ -s '$P/$f' ]"
done
check "sites-enabled links the site" "[ \"\$(readlink '$P/etc/nginx/sites-enabled/attestedge.conf')\" = '$P/etc/nginx/attestedge/site.conf' ]"
check "the data directory is initialised" "[ -f '$P/data/config.json' ] && [ -f '$P/data/jwks.json' ]"
check "journald gets a line per request (server.requestLog all)" "grep -q '\"requestLog\" *: *\"all\"' '$P/data/config.json'"
check "the signing keys are 0600" '[ -z "$(find "$P/data/keys" -name "*.pem" ! -perm 600)" ] && [ -n "$(find "$P/data/keys" -name "*.pem")" ]'
check "the challenge secret is 0600" "[ \"\$(stat -c %a '$P/data/secrets/challenge.key')\" = 600 ]"
if [ "$(id -u)" = 0 ]; then
  check "the data directory belongs to the service user" "[ \"\$(stat -c %U '$P/data')\" = attestedge ]"
fi
check "the units run the installed binaries on the installed data" \
  "grep -q 'ExecStart=$P/bin/attest-%i --socket /run/attestedge/%i.sock --data $P/data' '$P/etc/systemd/system/attestedge@.service'"
check "the site includes the installed fastcgi_params and serves the data's JWKS" \
  "grep -q 'include $P/etc/nginx/attestedge/fastcgi_params;' '$P/etc/nginx/attestedge/site.conf' && grep -q 'alias $P/data/jwks.json;' '$P/etc/nginx/attestedge/site.conf'"
check "the console's files are installed beside the templates, and the site serves them from there" \
  "cmp -s console/index.html '$P/share/attestedge/console/index.html' && cmp -s console/js/api.js '$P/share/attestedge/console/js/api.js' \
   && grep -q 'alias $(realpath "$P")/share/attestedge/console/;' '$P/etc/nginx/attestedge/site.conf'"
# As Debian's nginx.conf: libnginx-mod-nchan's modules-enabled/50-mod-nchan.conf loads the flag stream's module.
printf 'load_module /usr/lib/nginx/modules/ngx_nchan_module.so;\nevents {}\nhttp { include %s/etc/nginx/sites-enabled/*.conf; }\n' "$P" > "$P/nginx-test.conf"
# nginx -t binds the flag stream's publisher socket in /run/attestedge: made as the nginx.service
# drop-in makes it before nginx starts (and removed again if this made it).
RUN_MADE=""
[ -e /run/attestedge ] || { install -d -m 0750 /run/attestedge 2>/dev/null && RUN_MADE=1; }
check "nginx -t passes on the written site" "nginx -t -q -c '$P/nginx-test.conf' -p '$P' 2>/dev/null"
[ -z "$RUN_MADE" ] || rm -rf /run/attestedge
check "the nginx.service drop-in raises nginx's open-file limit for the flag streams (systemd's default soft limit is 1024)" \
  "grep -q '^LimitNOFILE=65536$' '$P/etc/systemd/system/nginx.service.d/attestedge.conf'"
check "the nginx.service drop-in makes /run/attestedge for the service user and removes a stale publisher socket" \
  "grep -q '^ExecStartPre=-/usr/bin/install -d -m 0750 -o attestedge -g www-data /run/attestedge$' '$P/etc/systemd/system/nginx.service.d/attestedge.conf' && grep -q 'flags-publish.sock -type s -delete$' '$P/etc/systemd/system/nginx.service.d/attestedge.conf'"
if command -v systemd-analyze > /dev/null; then
  cp "$P/etc/systemd/system/attestedge@.service" "$P/attestedge@refresh.service"
  verify=$(systemd-analyze verify --man=no "$P/attestedge@refresh.service" "$P/etc/systemd/system/attestedge-deliver.service" \
           "$P/etc/systemd/system/attestedge-receipts.service" "$P/etc/systemd/system/attestedge.target" 2>&1); rcv=$?
  check "systemd-analyze verify passes on the units" '[ $rcv = 0 ]' || echo "$verify"
fi
sums1=$(cd "$P" && find bin etc share -type f -exec sha256sum {} + | sort)
sleep 1
out2=$(bash nginx/deploy/install.sh --prefix "$P" --data "$P/data" --no-build 2>&1); rc2=$?
sums2=$(cd "$P" && find bin etc share -type f -exec sha256sum {} + | sort)
check "a second run exits 0 and says nothing changed" '[ $rc2 = 0 ] && grep -q "nothing changed" <<< "$out2"' || echo "$out2" | tail -8
check "a second run leaves every installed file as it was" '[ "$sums1" = "$sums2" ]'
check "and rewrites nothing (no file newer than the first run)" \
  '[ -z "$(cd "$P" && find bin etc share -type f -newer "$P/share/attestedge/manifest" | grep -v manifest)" ]'
cp "$P/bin/attest-refresh" "$P/old-refresh"; echo "# older build" >> "$P/bin/attest-refresh"
out3=$(bash nginx/deploy/install.sh --prefix "$P" --data "$P/data" --no-build 2>&1)
check "an upgrade re-installs exactly what differs" \
  '[ "$(grep -c "^installed " <<< "$out3")" = 1 ] && grep -q "installed $P/bin/attest-refresh" <<< "$out3"' || echo "$out3" | tail -8
check "and keeps the data directory's keys" '[ -n "$(find "$P/data/keys" -name "*.pem")" ]'
if [ "$(id -u)" = 0 ]; then
  # Issue 37: root's install.sh treats DATA as the service user's (an attacker's) to write.
  # The victims live in a directory of root's own; everything hostile is planted AS the
  # service user.
  V=$(mktemp -d /tmp/attestedge-victim.XXXXXX)
  echo "root's own file" > "$V/target"
  mkdir "$V/dir"
  victims_before=$(stat -c '%U:%G %a %s' "$V/target" "$V/dir")
  as_service() { runuser -u attestedge -- "$@"; }
  # Item 3: links in DATA to root's files. install.sh hands DATA to attestedge:www-data, so
  # each link (attestedge:attestedge) is one it chowns.
  as_service ln -s "$V/target" "$P/data/planted-link"
  as_service ln -s "$V/dir" "$P/data/keys/planted-dir-link"
  as_service ln "$V/target" "$P/data/planted-hardlink" 2>/dev/null  # fs.protected_hardlinks refuses it
  out5=$(bash nginx/deploy/install.sh --prefix "$P" --data "$P/data" --no-build 2>&1); rc5=$?
  check "install.sh with links planted in DATA exits 0" '[ $rc5 = 0 ]' || echo "$out5" | tail -8
  check "a link the service user planted does not hand root's file or directory to it" \
    '[ "$(stat -c "%U:%G %a %s" "$V/target" "$V/dir")" = "$victims_before" ] && [ "$(cat "$V/target")" = "root'"'"'s own file" ]' \
    || stat -c '%n %U:%G %a' "$V/target" "$V/dir"
  check "the link itself is handed over (chown -h)" '[ "$(stat -c %U:%G "$P/data/planted-link")" = "attestedge:www-data" ]'
  rm -f "$P/data/planted-link" "$P/data/keys/planted-dir-link" "$P/data/planted-hardlink"

  # Item 1: server.listen with nginx syntax in it, as in the issue: it ends in a valid port
  # (all the old check asked) and would make root's nginx write an access log line of the
  # attacker's choice into $V/written.
  payload="127.0.0.1:18080; } log_format p escape=none '\$http_x'; server { listen 127.0.0.1:18081; access_log $V/written p; } server { listen 127.0.0.1:18082"
  cp -p "$P/data/config.json" "$V/config.saved"
  site_before=$(sha256sum < "$P/etc/nginx/attestedge/site.conf")
  out6=$(as_service "$P/bin/attestctl" config set server.listen "$payload" --data "$P/data" 2>&1); rc6=$?
  check "config set as the service user refuses the payload, naming server.listen" \
    '[ $rc6 != 0 ] && grep -q "server.listen" <<< "$out6" && cmp -s "$P/data/config.json" "$V/config.saved"' || echo "$out6"
  # By hand, as the service user may: config.json is its file.
  as_service python3 -c 'import json, sys; c = json.load(open(sys.argv[1])); c["server"]["listen"] = sys.argv[2]; open(sys.argv[1], "w").write(json.dumps(c))' \
    "$P/data/config.json" "$payload"
  check "(the payload is in config.json)" 'grep -qF "access_log $V/written" "$P/data/config.json"'
  out7=$(bash nginx/deploy/install.sh --prefix "$P" --data "$P/data" --no-build 2>&1); rc7=$?
  check "install.sh refuses a config.json whose server.listen is not an address, naming the key" \
    '[ $rc7 != 0 ] && grep -q "server.listen" <<< "$out7"' || echo "$out7" | tail -8
  check "and leaves the installed site as it was (no payload in it)" \
    '[ "$(sha256sum < "$P/etc/nginx/attestedge/site.conf")" = "$site_before" ] && ! grep -q "log_format\|$V" "$P/etc/nginx/attestedge/site.conf"'
  check "nothing was written where the payload pointed" '[ ! -e "$V/written" ]'
  cp -p "$V/config.saved" "$P/data/config.json"
  out8=$(bash nginx/deploy/install.sh --prefix "$P" --data "$P/data" --no-build 2>&1); rc8=$?
  check "with config.json repaired, install.sh runs again" '[ $rc8 = 0 ]' || echo "$out8" | tail -8
  rm -rf "$V"
fi
out4=$(bash nginx/deploy/uninstall.sh --prefix "$P" 2>&1); rc4=$?
check "uninstall.sh exits 0" '[ $rc4 = 0 ]' || echo "$out4"
check "uninstall.sh removes every file it installed" \
  '[ -z "$(cd "$P" && find bin etc share -type f 2>/dev/null)" ] && [ ! -L "$P/etc/nginx/sites-enabled/attestedge.conf" ]'
check "uninstall.sh removes the console's directories" '[ ! -e "$P/share/attestedge/console" ]'
check "uninstall.sh keeps the data" "[ -f '$P/data/config.json' ] && [ -d '$P/data/store' ]"
check_summary install
