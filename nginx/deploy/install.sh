#!/usr/bin/env bash
# Installs AttestEdge on a plain nginx host, or upgrades an installation in place.
#
#   bash nginx/deploy/install.sh [--prefix DIR] [--user NAME] [--data DIR] [--sysconfdir DIR] [--listen ADDR] [--no-build]
#
# What it puts where (defaults in brackets):
#   PREFIX/bin/                       attestctl and one attest-* binary per endpoint        [/usr/local]
#   PREFIX/share/attestedge/nginx/    the nginx templates (attestctl site reads them)
#   PREFIX/share/attestedge/manifest  every file this script wrote (uninstall.sh reads it)
#   SYSCONF/nginx/attestedge/         the rendered site.conf and fastcgi_params               [/etc, or PREFIX/etc]
#   SYSCONF/nginx/sites-enabled/attestedge.conf   a symlink to that site.conf (Debian's nginx includes it)
#   SYSCONF/systemd/system/           attestedge@.service (one instance per endpoint), attestedge-deliver.service,
#                                     attestedge.target, with PREFIX, DATA and USER filled in
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
while (($#)); do
  case "$1" in
    --prefix) PREFIX=$2; shift 2 ;;
    --user) USER_NAME=$2; shift 2 ;;
    --data) DATA=$2; shift 2 ;;
    --sysconfdir) SYSCONF=$2; shift 2 ;;
    --listen) LISTEN=$2; shift 2 ;;
    --no-build) BUILD=0; shift ;;
    -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
    *) echo "install.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -n "$SYSCONF" ] || { [ "$PREFIX" = /usr/local ] && SYSCONF=/etc || SYSCONF=$PREFIX/etc; }
ENDPOINTS=(challenge validate refresh mad webhooks monitor)
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
for b in attestctl "${ENDPOINTS[@]/#/attest-}"; do
  [ -x "$BUILT/$b" ] || { echo "install.sh: $BUILT/$b is missing: build first (swift build -c release)" >&2; exit 1; }
done

mkdir -p "$PREFIX/bin" "$SHARE/nginx" "$SYSCONF/nginx/attestedge" "$SYSCONF/nginx/sites-enabled" "$SYSCONF/systemd/system"
touch "$MANIFEST.new"
# Listed whether or not it exists now, so uninstall.sh removes one a failed run left behind.
echo "$PENDING" >> "$MANIFEST.new"

# put SOURCE TARGET MODE: installs SOURCE as TARGET (a new file renamed over the old, so a
# running binary is never overwritten in place) unless TARGET already has those bytes and mode.
put() {
  local source=$1 target=$2 mode=$3
  echo "$target" >> "$MANIFEST.new"
  if [ -f "$target" ] && cmp -s "$source" "$target" && [ "$(stat -c %a "$target")" = "$mode" ]; then return; fi
  cp "$source" "$target.install-tmp"
  chmod "$mode" "$target.install-tmp"
  mv -f "$target.install-tmp" "$target"
  CHANGED+=("$target")
  echo "installed $target"
}

echo "==> binaries and templates"
for b in attestctl "${ENDPOINTS[@]/#/attest-}"; do put "$BUILT/$b" "$PREFIX/bin/$b" 755; done
for f in site.conf nginx.conf fastcgi_params; do put "nginx/conf/$f" "$SHARE/nginx/$f" 644; done

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
trap 'rm -rf "$SITE_TMP" "$MANIFEST.new"' EXIT
"$PREFIX/bin/attestctl" site --out "$SITE_TMP" --data "$DATA" --nginx-templates "$SHARE/nginx" > /dev/null
# The site points at the installed fastcgi_params, not at the scratch directory.
sed -i "s|$SITE_TMP|$SYSCONF/nginx/attestedge|g" "$SITE_TMP/site.conf"
put "$SITE_TMP/site.conf" "$SYSCONF/nginx/attestedge/site.conf" 644
put "$SITE_TMP/fastcgi_params" "$SYSCONF/nginx/attestedge/fastcgi_params" 644
link=$SYSCONF/nginx/sites-enabled/attestedge.conf
echo "$link" >> "$MANIFEST.new"
if [ "$(readlink "$link" 2>/dev/null)" != "$SYSCONF/nginx/attestedge/site.conf" ]; then
  ln -sfn "$SYSCONF/nginx/attestedge/site.conf" "$link"
  CHANGED+=("$link")
  echo "linked $link"
fi

echo "==> systemd units"
for unit in attestedge@.service attestedge-deliver.service attestedge.target; do
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

sort -u "$MANIFEST.new" > "$SITE_TMP/manifest"
put "$SITE_TMP/manifest" "$MANIFEST" 644

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
