#!/usr/bin/env bash
# Installs AttestEdge on a plain nginx host, or upgrades an installation in place.
#
#   bash nginx/deploy/install.sh [--prefix DIR] [--user NAME] [--data DIR] [--sysconfdir DIR] [--listen ADDR] [--no-build]
#                                [--domain NAME (--tls-cert FILE --tls-key FILE | --acme EMAIL)
#                                 [--http-listen ADDR] [--acme-webroot DIR]]
#
# HTTPS (--domain): the site listens with TLS (Mozilla's intermediate profile, HTTP/2, HSTS) on
# --listen (default *:443 with --domain), server_name NAME, and a plain-HTTP server on
# --http-listen (default *:80) redirects everything to https://NAME except
# /.well-known/acme-challenge/, served from --acme-webroot (default /var/lib/attestedge-acme, or
# PREFIX/acme-webroot with another --sysconfdir). The certificate is either
#   --tls-cert FILE --tls-key FILE   copied to SYSCONF/nginx/attestedge/tls/ (root's, directory
#                                    0700, key 0600); a second run with the same files changes nothing
#   --acme EMAIL                     Let's Encrypt through Debian's certbot: certonly --webroot
#                                    against our own site's ACME location (certbot edits no nginx
#                                    file), --deploy-hook 'systemctl reload nginx' so Debian's
#                                    certbot.timer renewals reload nginx; certificates in
#                                    SYSCONF/letsencrypt/live/NAME/. Run only while none is there.
#
# What it puts where (defaults in brackets):
#   PREFIX/bin/                       attestctl and one attest-* binary per endpoint        [/usr/local]
#   PREFIX/share/attestedge/nginx/    the nginx templates (attestctl site reads them)
#   PREFIX/share/attestedge/console/  the operator console's static files (the site serves them at /console/)
#   PREFIX/share/attestedge/manifest  every file this script wrote (uninstall.sh reads it)
#   SYSCONF/nginx/attestedge/         the rendered site.conf and fastcgi_params               [/etc, or PREFIX/etc]
#   SYSCONF/nginx/sites-enabled/attestedge.conf   a symlink to that site.conf (Debian's nginx includes it)
#   SYSCONF/systemd/system/           attestedge@.service (one instance per endpoint), attestedge-deliver.service,
#                                     nginx.service.d/attestedge.conf (removes a stale flag-stream publisher socket),
#                                     attestedge-receipts.service, attestedge.target, with PREFIX, DATA and USER filled in
#   DATA                              the data directory, created with 'attestctl init' when new  [/var/lib/attestedge]
#   the system user USER, created when missing                                              [attestedge]
#
# It is idempotent: a file already as it should be is left alone, and a second run with the
# same build prints "nothing changed". When systemd runs and SYSCONF is /etc it enables the
# target, and on an upgrade it swaps the endpoints whose binary changed one at a time
# (systemctl reload attestedge@NAME: the pool re-executes its new binary with zero failed
# requests), then tests and reloads nginx; a failing nginx -t or reload stops it with exit 1.
# What a run changed stays listed in PREFIX/share/attestedge/install-pending until nginx has
# reloaded, so a run after a failed or interrupted one finishes those steps even when no file
# changes. It never touches the data of an existing install, except that an explicit --listen
# is written to its config.json (server.listen, which the rendered site listens on).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD

PREFIX=/usr/local USER_NAME=attestedge DATA=/var/lib/attestedge SYSCONF="" LISTEN="" BUILD=1
DOMAIN="" TLS_CERT="" TLS_KEY="" ACME_EMAIL="" HTTP_LISTEN="" ACME_WEBROOT=""
die() { echo "install.sh: $*" >&2; exit 2; }
while (($#)); do
  case "$1" in
    --prefix) PREFIX=$2; shift 2 ;;
    --user) USER_NAME=$2; shift 2 ;;
    --data) DATA=$2; shift 2 ;;
    --sysconfdir) SYSCONF=$2; shift 2 ;;
    --listen) LISTEN=$2; shift 2 ;;
    --domain) DOMAIN=$2; shift 2 ;;
    --tls-cert) TLS_CERT=$2; shift 2 ;;
    --tls-key) TLS_KEY=$2; shift 2 ;;
    --acme) ACME_EMAIL=$2; shift 2 ;;
    --http-listen) HTTP_LISTEN=$2; shift 2 ;;
    --acme-webroot) ACME_WEBROOT=$2; shift 2 ;;
    --no-build) BUILD=0; shift ;;
    -h|--help) sed -n '2,41p' "$0"; exit 0 ;;
    *) echo "install.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -n "$SYSCONF" ] || { [ "$PREFIX" = /usr/local ] && SYSCONF=/etc || SYSCONF=$PREFIX/etc; }
# HTTPS flags: exactly one certificate source, and only with a domain (the redirect's target).
if [ -n "$DOMAIN" ]; then
  [ -n "$TLS_CERT$TLS_KEY$ACME_EMAIL" ] || die "--domain needs --tls-cert FILE --tls-key FILE or --acme EMAIL"
  [ -z "$ACME_EMAIL" ] || [ -z "$TLS_CERT$TLS_KEY" ] || die "--acme and --tls-cert/--tls-key exclude each other"
  [ -n "$ACME_EMAIL" ] || [ -n "$TLS_CERT" -a -n "$TLS_KEY" ] || die "--tls-cert FILE and --tls-key FILE go together"
  [ -z "$ACME_EMAIL" ] || [[ "$ACME_EMAIL" =~ ^[^[:space:]@]+@[^[:space:]@]+$ ]] || die "--acme needs an e-mail address"
  [ -n "$TLS_CERT" ] && { [ -f "$TLS_CERT" ] && [ -f "$TLS_KEY" ] || die "--tls-cert/--tls-key: no such file"; }
  [ -z "$ACME_EMAIL" ] || command -v certbot > /dev/null \
    || die "--acme needs Debian's certbot (apt-get install certbot)"
  [ -n "$LISTEN" ] || LISTEN='*:443'
  [ -n "$HTTP_LISTEN" ] || HTTP_LISTEN='*:80'
  if [ -z "$ACME_WEBROOT" ]; then
    [ "$SYSCONF" = /etc ] && ACME_WEBROOT=/var/lib/attestedge-acme || ACME_WEBROOT=$PREFIX/acme-webroot
  fi
  TLS_DIR=$SYSCONF/nginx/attestedge/tls
  LE_DIR=$SYSCONF/letsencrypt
else
  [ -z "$TLS_CERT$TLS_KEY$ACME_EMAIL$HTTP_LISTEN$ACME_WEBROOT" ] \
    || die "--tls-cert, --tls-key, --acme, --http-listen and --acme-webroot need --domain NAME"
fi
ENDPOINTS=(challenge validate refresh mad webhooks monitor flags feedback org)
SHARE=$PREFIX/share/attestedge
MANIFEST=$SHARE/manifest
PENDING=$SHARE/install-pending
CHANGED=()

# A production host: nginx and what the build links, not the test and benchmark tooling.
# --no-build installs the binaries already in .build/release: no toolchain needed on this host.
ATTEST_DEPS=runtime ATTEST_NEEDS_SWIFT=$BUILD source nginx/scripts/deps.sh
if [ "$BUILD" = 1 ]; then
  echo "==> release build"
  release_build
fi
BUILT=$ROOT/.build/release
for b in attestctl "${ENDPOINTS[@]/#/attest-}" attest-receipts; do
  [ -x "$BUILT/$b" ] || { echo "install.sh: $BUILT/$b is missing: build first (swift build -c release)" >&2; exit 1; }
done

mkdir -p "$PREFIX/bin" "$SHARE/nginx" "$SYSCONF/nginx/attestedge" "$SYSCONF/nginx/sites-enabled" "$SYSCONF/systemd/system" \
         "$SYSCONF/systemd/system/nginx.service.d"
touch "$MANIFEST.new"
# Listed whether or not it exists now, so uninstall.sh removes one a failed run left behind.
echo "$PENDING" >> "$MANIFEST.new"

# put SOURCE TARGET MODE: installs SOURCE as TARGET (a new file renamed over the old, so a
# running binary is never overwritten in place) unless TARGET already has those bytes and mode.
put() {
  local source=$1 target=$2 mode=$3
  echo "$target" >> "$MANIFEST.new"
  if [ -f "$target" ] && cmp -s "$source" "$target" && [ "$(stat -c %a "$target")" = "$mode" ]; then return; fi
  # Created unreadable to others, then given its mode: a TLS key is never world-readable, even briefly.
  (umask 077 && cp "$source" "$target.install-tmp")
  chmod "$mode" "$target.install-tmp"
  mv -f "$target.install-tmp" "$target"
  CHANGED+=("$target")
  echo "installed $target"
}

echo "==> binaries and templates"
for b in attestctl "${ENDPOINTS[@]/#/attest-}" attest-receipts; do put "$BUILT/$b" "$PREFIX/bin/$b" 755; done
for f in site.conf nginx.conf fastcgi_params tls.conf http-redirect.conf ffdhe2048.pem; do
  put "nginx/conf/$f" "$SHARE/nginx/$f" 644
done
# The console (docs/console.md), beside the templates: attestctl site renders @CONSOLE_DIR@ as it.
while IFS= read -r f; do
  install -d -m 755 "$(dirname "$SHARE/$f")"
  put "$f" "$SHARE/$f" 644
done < <(find console -type f | sort)

echo "==> user and data directory"
if [ "$(id -u)" = 0 ]; then
  if ! getent passwd "$USER_NAME" > /dev/null; then
    useradd --system --user-group --home-dir "$DATA" --no-create-home --shell /usr/sbin/nologin "$USER_NAME"
    echo "created system user $USER_NAME"
  fi
else
  echo "not root: skipping the system user $USER_NAME and ownership (run as root on a real host)"
fi
if [ ! -f "$DATA/config.json" ]; then
  "$PREFIX/bin/attestctl" init --data "$DATA" > /dev/null
  echo "created data directory $DATA"
  # Under systemd the pools' stderr is journald: make it the request log (a line per request).
  "$PREFIX/bin/attestctl" config set server.requestLog all --data "$DATA" > /dev/null
fi
# An explicit --listen applies to an existing install too (the site below is rendered from it).
# Written only when it differs: config set rewrites config.json even with the same value.
if [ -n "$LISTEN" ]; then
  current=$("$PREFIX/bin/attestctl" config show --data "$DATA" | sed -n 's/^server\.listen = //p')
  if [ "$current" != "\"$LISTEN\"" ]; then
    "$PREFIX/bin/attestctl" config set server.listen "$LISTEN" --data "$DATA" > /dev/null
    echo "set server.listen to $LISTEN (was $current)"
  fi
fi
chmod 0750 "$DATA"
if [ "$(id -u)" = 0 ]; then
  group=$(getent group www-data > /dev/null && echo www-data || id -gn "$USER_NAME")
  # Only files not already owned by the service user: a re-run changes nothing. DATA is the
  # service user's to write, so nothing in it is followed: chown -h changes a symbolic link
  # itself, never its target, and -execdir runs chown from each file's own directory (opened
  # by find without following links), so a directory swapped for a link meanwhile leads nowhere.
  # A file with several names may be a hard link to a file outside: skipped. (find refuses
  # -execdir with a relative directory in PATH: it gets a fixed one.)
  PATH=/usr/sbin:/usr/bin:/sbin:/bin find "$DATA" \( -type d -o -links 1 \) \( ! -user "$USER_NAME" -o ! -group "$group" \) -execdir chown -h "$USER_NAME:$group" {} +
fi

echo "==> nginx site"
SITE_TMP=$(mktemp -d)
# A run that stops before the manifest is written (certbot failing, nginx -t refusing) keeps
# a record of what it installed, joined with the last manifest, so uninstall.sh removes it.
keep_manifest() {
  [ -f "$MANIFEST.new" ] || return 0
  sort -u "$MANIFEST.new" $([ -f "$MANIFEST" ] && echo "$MANIFEST") > "$MANIFEST.partial" \
    && mv -f "$MANIFEST.partial" "$MANIFEST"
  rm -f "$MANIFEST.new" "$MANIFEST.partial"
}
trap 'rm -rf "$SITE_TMP"; keep_manifest' EXIT
# render [ARGS]: attestctl site into SITE_TMP/site (the grammar of every value is attestctl's),
# pointing at the installed directory rather than the scratch one.
render() {
  rm -rf "$SITE_TMP/site"
  "$PREFIX/bin/attestctl" site --out "$SITE_TMP/site" --data "$DATA" --nginx-templates "$SHARE/nginx" "$@" > /dev/null
  for f in "$SITE_TMP"/site/*.conf; do sed -i "s|$SITE_TMP/site|$SYSCONF/nginx/attestedge|g" "$f"; done
}
# install_site [FILE]: installs the rendered files and enables FILE (site.conf, or only the
# port-80 server http-redirect.conf while --acme has no certificate yet).
install_site() {
  local enabled=$SYSCONF/nginx/attestedge/${1:-site.conf}
  for f in "$SITE_TMP"/site/*; do put "$f" "$SYSCONF/nginx/attestedge/$(basename "$f")" 644; done
  local link=$SYSCONF/nginx/sites-enabled/attestedge.conf
  grep -qx "$link" "$MANIFEST.new" || echo "$link" >> "$MANIFEST.new"
  if [ "$(readlink "$link" 2>/dev/null)" != "$enabled" ]; then
    ln -sfn "$enabled" "$link"
    CHANGED+=("$link")
    echo "linked $link"
  fi
}
# check_webroot DIR: root creates and chmods the ACME webroot, so nobody else may be able to
# swap a part of its path for a link: refused inside the data directory (the service user's),
# with a link or a . or .. anywhere in it, or under a directory another account owns.
check_webroot() {
  local dir=$1 part="" data_real
  data_real=$(realpath -m "$DATA")
  case "$dir/" in "$DATA"/*|"$data_real"/*) die "--acme-webroot $dir is inside the data directory $DATA (the service user's)" ;; esac
  case "$dir/" in */./*|*/../*|*//*) die "--acme-webroot $dir has '.', '..' or '//' in it: give the plain path" ;; esac
  while :; do
    [ -L "${part:-/}" ] && die "--acme-webroot $dir: ${part:-/} is a symbolic link"
    if [ -e "${part:-/}" ]; then
      local owner
      owner=$(stat -c %u "${part:-/}")
      [ "$owner" = 0 ] || [ "$owner" = "$(id -u)" ] \
        || die "--acme-webroot $dir: ${part:-/} belongs to uid $owner, not root (it could swap the path for a link)"
      # Writable by others without the sticky bit (which keeps root's entries root's): they could rename.
      local mode
      mode=$(stat -c %a "${part:-/}")
      (( (8#$mode & 8#1000) || !(8#$mode & 8#022) )) \
        || die "--acme-webroot $dir: ${part:-/} is writable by others (mode $mode)"
    fi
    [ "$part" = "$dir" ] && break
    local rest=${dir#"$part"/}
    part=$part/${rest%%/*}
  done
}
DOMAIN_ARGS=()
if [ -n "$DOMAIN" ]; then
  DOMAIN_ARGS=(--domain "$DOMAIN" --acme-webroot "$ACME_WEBROOT" --http-listen "$HTTP_LISTEN")
  # Refuses a domain, address or webroot outside attestctl's grammar before anything uses them.
  render "${DOMAIN_ARGS[@]}"
  # Checked again once made: a link planted in a sticky directory (/tmp) before mkdir is caught.
  check_webroot "$ACME_WEBROOT"
  mkdir -p "$ACME_WEBROOT" && check_webroot "$ACME_WEBROOT" && chmod 755 "$ACME_WEBROOT"
  install -d -m 700 "$TLS_DIR"
fi
if [ -n "$TLS_CERT" ]; then
  echo "==> TLS certificate: $TLS_CERT"
  openssl x509 -in "$TLS_CERT" -noout 2> /dev/null || die "$TLS_CERT is not a PEM certificate"
  openssl pkey -in "$TLS_KEY" -noout 2> /dev/null || die "$TLS_KEY is not a PEM private key (or is encrypted)"
  [ "$(openssl x509 -in "$TLS_CERT" -noout -pubkey)" = "$(openssl pkey -in "$TLS_KEY" -pubout)" ] \
    || die "$TLS_KEY is not the key of $TLS_CERT"
  put "$TLS_CERT" "$TLS_DIR/fullchain.pem" 644
  put "$TLS_KEY" "$TLS_DIR/privkey.pem" 600
  DOMAIN_ARGS+=(--tls-cert "$TLS_DIR/fullchain.pem" --tls-key "$TLS_DIR/privkey.pem")
elif [ -n "$ACME_EMAIL" ]; then
  live=$LE_DIR/live/$DOMAIN
  if [ ! -s "$live/fullchain.pem" ] || [ ! -s "$live/privkey.pem" ]; then
    # Let's Encrypt asks for http://DOMAIN/.well-known/acme-challenge/TOKEN: the port-80 server
    # must be live first. Only it: the site without its certificate would answer plain HTTP on
    # the TLS port (and stay so if certbot fails); the full site is enabled once it has one.
    echo "==> ACME: serving the challenge location, then certbot for $DOMAIN"
    install_site http-redirect.conf
    if [ "$SYSCONF" = /etc ] && [ -d /run/systemd/system ] && command -v systemctl > /dev/null; then
      if ! nginx -t || ! systemctl reload nginx; then
        echo "install.sh: nginx -t or reload failed (above): cannot serve the ACME challenge" >&2
        exit 1
      fi
    fi
    certbot certonly --non-interactive --agree-tos --no-eff-email --email "$ACME_EMAIL" \
      --webroot --webroot-path "$ACME_WEBROOT" --domain "$DOMAIN" --keep-until-expiring \
      --config-dir "$LE_DIR" --deploy-hook "systemctl reload nginx" \
      || { echo "install.sh: certbot failed (above); the site stays without TLS until it succeeds" >&2; exit 1; }
  fi
  DOMAIN_ARGS+=(--tls-cert "$live/fullchain.pem" --tls-key "$live/privkey.pem")
fi
render "${DOMAIN_ARGS[@]}"
install_site

# Every open flag stream holds a connection in an nginx worker; Debian's nginx.conf allows 768
# per worker. Not edited here (the distribution's file): said, with the line to set.
NGINX_CONF=$SYSCONF/nginx/nginx.conf
if [ -f "$NGINX_CONF" ]; then
  WC=$(sed -n 's/^[[:space:]]*worker_connections[[:space:]]\{1,\}\([0-9]\{1,\}\);.*/\1/p' "$NGINX_CONF" | head -n 1)
  if [ -z "$WC" ] || [ "$WC" -lt 4096 ]; then
    echo "install.sh: warning: $NGINX_CONF allows ${WC:-512 (the default)} worker_connections per worker and each" >&2
    echo "    open flag stream holds one: set 'worker_connections 16384;' in its events block (docs/flag-stream.md)" >&2
  fi
fi

echo "==> systemd units"
for unit in attestedge@.service attestedge-deliver.service attestedge-receipts.service attestedge.target; do
  sed -e "s|/usr/local/bin|$PREFIX/bin|g" -e "s|/usr/local/share|$PREFIX/share|g" \
      -e "s|/var/lib/attestedge|$DATA|g" -e "s|^User=attestedge|User=$USER_NAME|" \
      "nginx/deploy/systemd/$unit" > "$SITE_TMP/$unit"
  if [ "$DATA" != /var/lib/attestedge ]; then
    # StateDirectory= only manages /var/lib/NAME: name the data directory writable instead.
    sed -i -e "/^StateDirectory/d" "$SITE_TMP/$unit"
    grep -q '^\[Service\]' "$SITE_TMP/$unit" && sed -i "/^\[Service\]/a ReadWritePaths=$DATA" "$SITE_TMP/$unit"
  fi
  put "$SITE_TMP/$unit" "$SYSCONF/systemd/system/$unit" 644
done

# nginx.service removes a stale flag-stream publisher socket before it starts (see the file).
sed -e "s|-o attestedge |-o $USER_NAME |" nginx/deploy/systemd/nginx.service.d/attestedge.conf > "$SITE_TMP/nginx-dropin.conf"
put "$SITE_TMP/nginx-dropin.conf" "$SYSCONF/systemd/system/nginx.service.d/attestedge.conf" 644

sort -u "$MANIFEST.new" > "$SITE_TMP/manifest"
put "$SITE_TMP/manifest" "$MANIFEST" 644
rm -f "$MANIFEST.new"

if [ "$SYSCONF" = /etc ] && [ -d /run/systemd/system ] && command -v systemctl > /dev/null; then
  # Recorded before acting on it: if a step below fails or the run is interrupted, the next run
  # finds the list and swaps and reloads what this one changed, though no file differs then.
  ((${#CHANGED[@]} == 0)) || printf '%s\n' "${CHANGED[@]}" >> "$PENDING"
  if [ ! -s "$PENDING" ] && systemctl is-enabled --quiet attestedge.target && systemctl is-active --quiet attestedge.target; then
    echo "==> nothing changed: $PREFIX and $SYSCONF already hold this build"
    exit 0
  fi
  ((${#CHANGED[@]})) || echo "==> no file changed, but an earlier run did not finish or attestedge.target is not running: finishing"
  mapfile -t TODO < <(sort -u "$PENDING" 2>/dev/null)
  echo "==> systemd: enable and swap what changed"
  systemctl daemon-reload
  systemctl enable --now attestedge.target
  for e in "${ENDPOINTS[@]}"; do
    if printf '%s\n' "${TODO[@]}" | grep -qx "$PREFIX/bin/attest-$e" && systemctl is-active --quiet "attestedge@$e"; then
      echo "swapping $e"
      systemctl reload "attestedge@$e"
      sleep 1
    fi
  done
  systemctl is-active --quiet attestedge-deliver && systemctl restart attestedge-deliver || true
  systemctl is-active --quiet attestedge-receipts && systemctl restart attestedge-receipts || true
  echo "==> nginx: test the configuration and reload"
  # Not `nginx -t && systemctl reload nginx`: set -e ignores a failure before && and the run
  # would end "installed" with exit 0 while nginx still serves the old site.
  if ! nginx -t; then
    echo "install.sh: nginx -t failed (above): nginx keeps serving its previous configuration;" >&2
    echo "    fix it (the site is $SYSCONF/nginx/attestedge/site.conf) and run install.sh again" >&2
    exit 1
  fi
  if ! systemctl reload nginx; then
    echo "install.sh: systemctl reload nginx failed (is nginx running? systemctl status nginx);" >&2
    echo "    start or fix nginx and run install.sh again" >&2
    exit 1
  fi
  rm -f "$PENDING"
else
  if [ "${#CHANGED[@]}" = 0 ]; then
    echo "==> nothing changed: $PREFIX and $SYSCONF already hold this build"
    exit 0
  fi
  echo "==> not starting anything: systemd is not running here or --sysconfdir is not /etc"
  echo "    on a real host: systemctl daemon-reload && systemctl enable --now attestedge.target && systemctl reload nginx"
fi
echo "==> installed: $PREFIX/bin, $SYSCONF/nginx/attestedge, $SYSCONF/systemd/system, data in $DATA"
