#!/usr/bin/env bash
# install.sh --domain with HTTPS (issue 39, item 1), against temporary prefixes:
#  - bad combinations of the HTTPS flags are refused with what to do;
#  - --domain localhost --tls-cert/--tls-key (a server certificate from a test CA made here) on
#    non-privileged loopback ports (--listen, --http-listen): the key is copied root-only, real
#    nginx (run by hand: no systemd here) serves the installed site over HTTPS with HTTP/2 and
#    HSTS, the installed pools (started by hand as the service user) let a software device enroll
#    and refresh over it, the port-80 server redirects to https://localhost:PORT and serves the
#    ACME webroot, testssl.sh finds nothing MEDIUM or worse, and a second run with the same
#    arguments changes nothing;
#  - a hostile domain and a key that is not the certificate's are refused, the site left alone;
#  - --acme EMAIL with a STAND-IN certbot on PATH (Let's Encrypt cannot be reached here): this
#    checks the arguments install.sh gives certbot (certonly --webroot on our own ACME
#    location, the deploy hook that reloads nginx on renewal) and that the site is then
#    rendered with the certificate certbot would have written (the stand-in writes one from
#    the test CA where certbot does); it does not check Let's Encrypt or certbot themselves.
# Needs the release build. Ends with "install-tls: N passed, M failed"; exits 1 on a failure.
set -uo pipefail
cd "$(dirname "$0")/../.."
source nginx/e2e/lib/check.sh
BIN=${ATTEST_BIN:-$PWD/.build/release}
W=$(mktemp -d /tmp/attestedge-install-tls.XXXXXX)
chmod 755 "$W"
P=$W/p P2=$W/acme
NGINX_PID="" POOL_PIDS=() RUN_MADE=""
cleanup() {
  [ -n "$NGINX_PID" ] && kill "$NGINX_PID" 2>/dev/null
  for pid in "${POOL_PIDS[@]}"; do kill "$pid" 2>/dev/null; done
  sleep 0.5
  [ -n "$RUN_MADE" ] && rm -rf /run/attestedge
  rm -rf "$W"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
HTTPS_PORT=$(free_port) HTTP_PORT=$(free_port) METRICS_PORT=$(free_port)

# A test CA and a server certificate for localhost, as nginx/e2e/tls.py makes them (why it names a CRL: there).
(
  cd "$W"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem -days 30 \
    -subj "/CN=AttestEdge install e2e test CA" -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign"
  openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj /CN=localhost
  printf '%s\n' subjectAltName=DNS:localhost,IP:127.0.0.1 basicConstraints=critical,CA:FALSE \
    keyUsage=critical,digitalSignature,keyEncipherment extendedKeyUsage=serverAuth \
    crlDistributionPoints=URI:http://crl.attestedge.invalid/test-ca.crl > ext.cnf
  openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 90 -extfile ext.cnf
  openssl req -newkey rsa:2048 -nodes -keyout other.key -out other.csr -subj /CN=other
) > "$W/pki.log" 2>&1 || { cat "$W/pki.log"; exit 1; }
CA=$W/ca.pem CERT=$W/server.pem KEY=$W/server.key

install_tls() {
  bash nginx/deploy/install.sh --prefix "$P" --data "$P/data" --no-build --domain localhost \
    --listen "127.0.0.1:$HTTPS_PORT" --http-listen "127.0.0.1:$HTTP_PORT" "$@" 2>&1
}

# Bad combinations: refused before anything is installed.
for bad in "--domain localhost" "--tls-cert $CERT --tls-key $KEY" "--domain localhost --tls-cert $CERT" \
           "--domain localhost --acme ops@example.com --tls-cert $CERT --tls-key $KEY" \
           "--domain localhost --acme not-an-address" "--acme ops@example.com" \
           "--domain localhost --tls-cert $W/missing.pem --tls-key $KEY"; do
  # shellcheck disable=SC2086  # the flags are split on purpose
  out=$(bash nginx/deploy/install.sh --prefix "$P" --data "$P/data" --no-build $bad 2>&1); rc=$?
  check "refused with exit 2 and a reason: ${bad//$W\//}" '[ $rc = 2 ] && grep -q "^install.sh: " <<< "$out"' \
    || echo "$out" | tail -3
done
check "and nothing was installed by them" '[ ! -e "$P/bin" ]'

# The data directory first (test CA, a tenant, its own metrics port), then the install.
mkdir -p "$P"
"$BIN/attestctl" init --data "$P/data" --test-ca > /dev/null
"$BIN/attestctl" config set server.metricsListen "127.0.0.1:$METRICS_PORT" --data "$P/data" > /dev/null
"$BIN/attestctl" org add acme --tier pro --rate-limit 0 --data "$P/data" > /dev/null
"$BIN/attestctl" app add --org acme --team ABCDE12345 --bundle com.example.app --env both --data "$P/data" > /dev/null
out1=$(install_tls --tls-cert "$CERT" --tls-key "$KEY"); rc1=$?
check "install.sh --domain localhost --tls-cert --tls-key exits 0" '[ $rc1 = 0 ]' || echo "$out1" | tail -20
T=$P/etc/nginx/attestedge
check "the key is copied root-only (directory 0700, key 0600), the certificate 0644" \
  '[ "$(stat -c %a "$T/tls")" = 700 ] &&
     [ "$(stat -c %a "$T/tls/privkey.pem")" = 600 ] &&
     [ "$(stat -c %a "$T/tls/fullchain.pem")" = 644 ] &&
     cmp -s "$KEY" "$T/tls/privkey.pem"'
check "the site listens with ssl http2 as localhost and includes the installed tls.conf" \
  'grep -q "listen 127.0.0.1:$HTTPS_PORT ssl http2;" "$T/site.conf" &&
     grep -q "server_name localhost;" "$T/site.conf" &&
     grep -q "include $T/tls.conf;" "$T/site.conf"'
check "tls.conf serves the installed copies" \
  'grep -q "^ssl_certificate $T/tls/fullchain.pem;" "$T/tls.conf" &&
     grep -q "^ssl_certificate_key $T/tls/privkey.pem;" "$T/tls.conf" &&
     grep -q "^ssl_dhparam $T/ffdhe2048.pem;" "$T/tls.conf"'
check "the port-80 server is on --http-listen with the ACME webroot" \
  'grep -q "listen 127.0.0.1:$HTTP_PORT;" "$T/http-redirect.conf" &&
     grep -q "root $P/acme-webroot;" "$T/http-redirect.conf"'

# Real nginx on the installed site, as Debian's runs (master root, workers www-data), and the
# installed pools as the units run them (attestedge:www-data, umask 0007, /run/attestedge).
# /run/attestedge first, as the units' RuntimeDirectory= (and the nginx.service drop-in) make
# it: nginx binds the flag stream's publisher socket there, nginx -t included.
RUN=/run/attestedge
[ -e "$RUN" ] || RUN_MADE=1
install -d -o attestedge -g www-data -m 750 "$RUN"
cat > "$W/nginx.conf" <<CONF
load_module /usr/lib/nginx/modules/ngx_nchan_module.so;
user www-data;
pid $W/nginx.pid;
error_log $W/error.log warn;
events {}
http {
    client_body_temp_path $W/client-body;
    fastcgi_temp_path $W/fastcgi;
    access_log off;
    types { application/json json; }
    include $P/etc/nginx/sites-enabled/*.conf;
}
CONF
check "nginx -t passes on the installed HTTPS site" "nginx -t -q -c '$W/nginx.conf' -p '$W' 2>/dev/null" \
  || nginx -t -c "$W/nginx.conf" -p "$W"
for e in challenge validate refresh mad webhooks monitor flags; do
  runuser -u attestedge -g www-data -- sh -c "umask 007; exec '$P/bin/attest-$e' --socket $RUN/$e.sock --workers 1 --data '$P/data'" \
    > "$W/pool-$e.log" 2>&1 &
  POOL_PIDS+=($!)
done
for _ in $(seq 100); do [ -S $RUN/monitor.sock ] && [ -S $RUN/refresh.sock ] && [ -S $RUN/validate.sock ] && break; sleep 0.1; done
nginx -c "$W/nginx.conf" -p "$W" -g 'daemon off;' > "$W/nginx.out" 2>&1 &
NGINX_PID=$!
for _ in $(seq 100); do curl -s -o /dev/null --cacert "$CA" "https://localhost:$HTTPS_PORT/" && break; sleep 0.1; done
B=https://localhost:$HTTPS_PORT
headers=$(curl -sS --http2 --cacert "$CA" -D - -o "$W/jwks" -w '%{http_version}\n' "$B/.well-known/jwks.json" 2>&1)
check "HTTPS serves the installed site (JWKS 200), verified against the test CA, over HTTP/2" \
  'grep -q "^HTTP/2 200" <<< "$headers" &&
     [ "$(tail -1 <<< "$headers")" = 2 ] &&
     grep -q "\"keys\"" "$W/jwks"' || echo "$headers"
check "with HSTS" 'grep -qi "^strict-transport-security: max-age=63072000" <<< "$headers"'
D=("$BIN/attest-device" --server "$B" --ca-file "$CA" --test-ca "$P/data/test-ca/ca.pem" --team ABCDE12345
   --bundle com.example.app --state "$W/device.json")
out=$("${D[@]}" enroll 2>&1); rc=$?
check "a software device enrolls over the installed HTTPS site" '[ $rc = 0 ]' \
  || { echo "$out"; tail -5 "$W"/pool-validate.log "$W/error.log"; }
out=$("${D[@]}" refresh 2>&1); rc=$?
check "and refreshes" '[ $rc = 0 ]' || echo "$out"
# testssl.sh on the installed site, as nginx/e2e/tls.py runs it on serve's (the groups, and what
# is skipped offline and why, are listed there): no finding of severity MEDIUM or worse.
testssl --quiet --color 0 --warnings off --nodns none --add-ca "$CA" --jsonfile "$W/testssl.json" \
  --fast -p -s -f -P -S -h -U "127.0.0.1:$HTTPS_PORT" > "$W/testssl.out" 2>&1
serious=$(python3 -c 'import json, sys
for i in json.load(open(sys.argv[1])):
    if i["severity"] in ("MEDIUM", "HIGH", "CRITICAL"): print(i["severity"], i["id"], i["finding"])' "$W/testssl.json" 2>&1)
check "testssl.sh on the installed site: no finding of severity MEDIUM or worse" \
  '[ -s "$W/testssl.json" ] && [ -z "$serious" ]' "$serious"
redirect=$(curl -s -o /dev/null -w '%{http_code} %{redirect_url}' -H 'Host: localhost' "http://127.0.0.1:$HTTP_PORT/api/v1/x?y=1")
check "port 80 redirects everything to https://localhost:PORT with the request URI" \
  '[ "$redirect" = "301 https://localhost:$HTTPS_PORT/api/v1/x?y=1" ]' "$redirect"
mkdir -p "$P/acme-webroot/.well-known/acme-challenge"
echo token-123 > "$P/acme-webroot/.well-known/acme-challenge/tok"
acme=$(curl -s -w ' %{http_code}' -H 'Host: localhost' "http://127.0.0.1:$HTTP_PORT/.well-known/acme-challenge/tok")
check "except ACME's path, served from the webroot" '[ "$acme" = "token-123
 200" ]' "$acme"
rm -rf "$P/acme-webroot/.well-known"

sums1=$(cd "$P" && find bin etc share -type f -exec sha256sum {} + | sort)
sleep 1
out2=$(install_tls --tls-cert "$CERT" --tls-key "$KEY"); rc2=$?
sums2=$(cd "$P" && find bin etc share -type f -exec sha256sum {} + | sort)
check "a second run with the same arguments says nothing changed" '[ $rc2 = 0 ] && grep -q "nothing changed" <<< "$out2"' \
  || echo "$out2" | tail -8
check "and leaves every installed file as it was" '[ "$sums1" = "$sums2" ]'

# Hostile and mistaken input after a good install: refused, the installed site untouched.
site_before=$(sha256sum "$T"/*.conf "$T"/tls/*)
out=$(install_tls --tls-cert "$CERT" --tls-key "$W/other.key"); rc=$?
check "a key that is not the certificate's is refused" '[ $rc != 0 ] && grep -q "is not the key of" <<< "$out"' || echo "$out" | tail -3
out=$(bash nginx/deploy/install.sh --prefix "$P" --data "$P/data" --no-build --domain 'localhost; include /etc/shadow' \
      --listen "127.0.0.1:$HTTPS_PORT" --http-listen "127.0.0.1:$HTTP_PORT" --tls-cert "$CERT" --tls-key "$KEY" 2>&1); rc=$?
check "a domain with nginx syntax is refused by the site's grammar" '[ $rc != 0 ] && grep -q "not a DNS host name" <<< "$out"' \
  || echo "$out" | tail -3
out=$(install_tls --tls-cert "$CERT" --tls-key "$KEY" --acme-webroot '/tmp/x; root /') ; rc=$?
check "an ACME webroot with nginx syntax is refused" '[ $rc != 0 ] && grep -q "ACME webroot" <<< "$out"' || echo "$out" | tail -3
check "and the installed site and key are as they were" '[ "$(sha256sum "$T"/*.conf "$T"/tls/*)" = "$site_before" ]'

# Review of issue 39: root makes and chmods the ACME webroot, so the service user plays the
# attacker: a link it planted as the webroot (in the data directory, or in a directory of its
# own) must not make root chmod the link's target (here a root-only directory standing in for /etc).
install -d -m 700 "$W/victim"
install -d -o attestedge -m 755 "$W/svc"
runuser -u attestedge -- ln -s "$W/victim" "$P/data/acme"
runuser -u attestedge -- ln -s "$W/victim" "$W/svc/acme"
out=$(install_tls --tls-cert "$CERT" --tls-key "$KEY" --acme-webroot "$P/data/acme"); rc=$?
check "an ACME webroot inside the data directory (the service user's link) is refused with exit 2" \
  '[ $rc = 2 ] && grep -q "inside the data directory" <<< "$out"' || echo "$out" | tail -3
out=$(install_tls --tls-cert "$CERT" --tls-key "$KEY" --acme-webroot "$W/svc/acme"); rc=$?
check "an ACME webroot under a directory the service user owns is refused with exit 2" \
  '[ $rc = 2 ] && grep -q "belongs to uid $(id -u attestedge), not root" <<< "$out"' || echo "$out" | tail -3
out=$(install_tls --tls-cert "$CERT" --tls-key "$KEY" --acme-webroot "$W/svc/acme/x"); rc=$?
check "an ACME webroot through a link is refused with exit 2" '[ $rc = 2 ]' || echo "$out" | tail -3
check "and the links' target keeps its mode (0700)" '[ "$(stat -c %a "$W/victim")" = 700 ]' "$(stat -c %a "$W/victim")"
check "and the installed site and key are still as they were" '[ "$(sha256sum "$T"/*.conf "$T"/tls/*)" = "$site_before" ]'

# Review of issue 39: --acme before a certificate exists enables only the port-80 server (ACME
# path and redirect). Before, the whole site was enabled without TLS: the TLS port answered plain
# HTTP, and stayed so when certbot failed. Here certbot fails; a real nginx then runs what is enabled.
P3=$W/acmefail FAIL_HTTPS_PORT=$(free_port) FAIL_HTTP_PORT=$(free_port)
"$BIN/attestctl" init --data "$P3/data" > /dev/null
"$BIN/attestctl" config set server.metricsListen "127.0.0.1:$(free_port)" --data "$P3/data" > /dev/null
mkdir -p "$W/failbin"
printf '#!/bin/sh\necho "stand-in certbot: failing on purpose" >&2\nexit 1\n' > "$W/failbin/certbot"
chmod 755 "$W/failbin/certbot"
out=$(PATH=$W/failbin:$PATH bash nginx/deploy/install.sh --prefix "$P3" --data "$P3/data" --no-build \
      --domain localhost --acme ops@example.com --listen "127.0.0.1:$FAIL_HTTPS_PORT" \
      --http-listen "127.0.0.1:$FAIL_HTTP_PORT" 2>&1); rc=$?
check "install.sh --acme with a failing certbot exits non-zero, saying so" \
  '[ $rc != 0 ] && grep -q "certbot failed" <<< "$out"' || echo "$out" | tail -5
check "the failed run still records what it installed, so uninstall.sh removes it" \
  'grep -qx "$P3/bin/attestctl" "$P3/share/attestedge/manifest" && grep -qx "$P3/etc/nginx/sites-enabled/attestedge.conf" "$P3/share/attestedge/manifest" && [ ! -e "$P3/share/attestedge/manifest.new" ]' \
  "$(cat "$P3/share/attestedge/manifest" 2>&1 | head -30)"
sed -e "s|$W/nginx.pid|$W/nginx3.pid|" -e "s|$W/error.log|$W/error3.log|" -e "s|$P/etc|$P3/etc|" \
  -e "s|$W/client-body|$W/client-body3|" -e "s|$W/fastcgi;|$W/fastcgi3;|" "$W/nginx.conf" > "$W/nginx3.conf"
nginx -c "$W/nginx3.conf" -p "$W" -g 'daemon off;' > "$W/nginx3.out" 2>&1 &
NGINX3_PID=$!
mkdir -p "$P3/acme-webroot/.well-known/acme-challenge"
echo token-456 > "$P3/acme-webroot/.well-known/acme-challenge/tok"
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$FAIL_HTTP_PORT/" && break; sleep 0.1; done
acme=$(curl -s -w ' %{http_code}' -H 'Host: localhost' "http://127.0.0.1:$FAIL_HTTP_PORT/.well-known/acme-challenge/tok")
check "the port-80 server is live and serves the ACME challenge" '[ "$acme" = "token-456
 200" ]' "$acme $(cat "$W/nginx3.out")"
plain=$(curl -s -o /dev/null -w '%{http_code}' --max-time 3 "http://127.0.0.1:$FAIL_HTTPS_PORT/.well-known/jwks.json")
check "and nothing answers plain HTTP on the TLS port" '[ "$plain" = 000 ]' "HTTP status $plain"
kill "$NGINX3_PID" 2>/dev/null; wait "$NGINX3_PID" 2>/dev/null

# --acme with a stand-in certbot (see the header: it records its arguments and writes a
# certificate from the test CA; Let's Encrypt is not contacted).
mkdir -p "$W/fakebin"
cat > "$W/fakebin/certbot" <<STANDIN
#!/usr/bin/env bash
# STAND-IN for Debian's certbot in nginx/e2e/install-tls.sh: records its arguments, writes a
# certificate from the e2e test CA into CONFIG_DIR/live/DOMAIN/ as certbot would.
printf '%s\n' "\$@" > "$W/certbot.args"
echo call >> "$W/certbot.calls"
while ((\$#)); do
  case "\$1" in --config-dir) config=\$2; shift ;; --domain) domain=\$2; shift ;; esac
  shift
done
mkdir -p "\$config/live/\$domain"
cp "$CERT" "\$config/live/\$domain/fullchain.pem"
cp "$KEY" "\$config/live/\$domain/privkey.pem"
STANDIN
chmod 755 "$W/fakebin/certbot"
acme_install() {
  PATH=$W/fakebin:$PATH bash nginx/deploy/install.sh --prefix "$P2" --data "$P2/data" --no-build --domain localhost \
    --acme ops@example.com --listen "127.0.0.1:$HTTPS_PORT" --http-listen "127.0.0.1:$HTTP_PORT" 2>&1
}
out3=$(acme_install); rc3=$?
check "install.sh --acme (stand-in certbot) exits 0" '[ $rc3 = 0 ]' || echo "$out3" | tail -20
args=$(tr '\n' ' ' < "$W/certbot.args" 2>/dev/null)
check "certbot certonly --webroot on our own ACME webroot, non-interactive, for the domain and e-mail" \
  'grep -q "^certonly .*--webroot --webroot-path $P2/acme-webroot --domain localhost " <<< "$args" &&
     grep -q -- "--non-interactive --agree-tos --no-eff-email --email ops@example.com " <<< "$args"' "$args"
check "with the deploy hook that reloads nginx on each renewal" 'grep -q -- "--deploy-hook systemctl reload nginx" <<< "$args"' "$args"
check "with certbot's own directories under SYSCONF (the default /etc/letsencrypt on a host)" \
  'grep -q -- "--config-dir $P2/etc/letsencrypt " <<< "$args"' "$args"
check "the site then serves certbot's certificate" \
  'grep -q "^ssl_certificate $P2/etc/letsencrypt/live/localhost/fullchain.pem;" "$P2/etc/nginx/attestedge/tls.conf"'
check "certbot only fetches (certonly, no --nginx installer): our site file stays ours" \
  '! grep -qE -- "(^| )(--nginx|--installer|-i|install|run) " <<< " $args"' "$args"
out4=$(acme_install); rc4=$?
check "a second --acme run changes nothing and does not call certbot again" \
  '[ $rc4 = 0 ] &&
     grep -q "nothing changed" <<< "$out4" &&
     [ "$(wc -l < "$W/certbot.calls")" = 1 ]' || echo "$out4" | tail -5

for prefix in "$P" "$P2" "$P3"; do bash nginx/deploy/uninstall.sh --prefix "$prefix" > /dev/null 2>&1; done
check "uninstall.sh removes the copied key too" '[ ! -e "$T/tls/privkey.pem" ]'
check_summary install-tls
