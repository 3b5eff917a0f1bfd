#!/usr/bin/env bash
# Removes what nginx/deploy/install.sh put in place (the files its manifest lists), never the data
# directory or the system user (both hold state: remove them by hand if you mean it).
#
#   bash nginx/deploy/uninstall.sh [--prefix DIR]        (the --prefix given to install.sh)
set -euo pipefail
PREFIX=/usr/local
while (($#)); do
  case "$1" in
    --prefix) PREFIX=$2; shift 2 ;;
    -h|--help) sed -n '2,6p' "$0"; exit 0 ;;
    *) echo "uninstall.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
MANIFEST=$PREFIX/share/attestedge/manifest
[ -f "$MANIFEST" ] || { echo "uninstall.sh: no $MANIFEST: nothing installed under $PREFIX" >&2; exit 1; }
if grep -qx "/etc/systemd/system/attestedge.target" "$MANIFEST" && [ -d /run/systemd/system ] && command -v systemctl > /dev/null; then
  systemctl disable --now attestedge.target 'attestedge@*' attestedge-deliver attestedge-receipts 2>/dev/null || true
fi
# The directory of nginx.service's drop-in (attestedge.conf), removed below if nothing else is in it.
mapfile -t DROPIN_DIRS < <(grep '/nginx\.service\.d/attestedge\.conf$' "$MANIFEST" | xargs -r -n1 dirname)
removed=0
while read -r path; do
  [ -n "$path" ] || continue
  if [ -e "$path" ] || [ -L "$path" ]; then rm -f "$path"; removed=$((removed + 1)); fi
done < "$MANIFEST"
rm -f "$MANIFEST"
# Directories install.sh created, if they are empty now.
# The console's subdirectories deepest first (find -depth), then the share directory itself.
[ -d "$PREFIX/share/attestedge/console" ] && find "$PREFIX/share/attestedge/console" -depth -type d -empty -delete
for dir in "$PREFIX/share/attestedge/nginx" "$PREFIX/share/attestedge"; do rmdir "$dir" 2>/dev/null || true; done
for dir in "${DROPIN_DIRS[@]}"; do rmdir "$dir" 2>/dev/null || true; done
echo "removed $removed files installed under $PREFIX (the data directory and the system user are kept)"
if [ -d /run/systemd/system ] && command -v systemctl > /dev/null; then systemctl daemon-reload 2>/dev/null || true; fi
