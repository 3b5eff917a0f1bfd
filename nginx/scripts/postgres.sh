#!/usr/bin/env bash
# A throwaway PostgreSQL 15 cluster for tests (Debian's postgresql package), in a directory of
# its own: listens on 127.0.0.1 only (and a unix socket in DIR), trust authentication, a role
# `attestedge` (LOGIN CREATEDB, so a suite can make a database of its own) owning a database
# `attestedge`. fsync stays on: the durability tests rely on it.
#
#   postgres.sh start DIR [PORT]   initialise DIR if it holds no cluster, start it (PORT: a free
#                                  one by default; a cluster keeps the port it was made with)
#                                  and wait until it accepts connections; prints the libpq URL
#                                  (host=127.0.0.1 port=N dbname=attestedge user=attestedge)
#   postgres.sh url DIR            prints that URL
#   postgres.sh stop DIR           fast shutdown, waiting for it; nothing running is not an error
#   postgres.sh destroy DIR        stop, then delete DIR
#
# initdb and postgres refuse to run as root: as root they run as the `postgres` system user
# (runuser) and DIR is handed to it. Layout: DIR/pgdata (the cluster), DIR/postgres.log,
# DIR/.s.PGSQL.PORT (the socket). Everything but the URL goes to stderr.
set -euo pipefail

PG_BIN=${ATTEST_PG_BIN:-/usr/lib/postgresql/15/bin}
PG_USER=postgres

die() { echo "postgres.sh: $*" >&2; exit 1; }

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//' >&2
  exit 2
}

# Runs a command as the cluster's owner: ourselves unless we are root.
as_owner() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u "$PG_USER" -- "$@"; else "$@"; fi
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

port_of() {
  local port
  port=$(sed -n "s/^port = \([0-9]*\).*/\1/p" "$1/pgdata/postgresql.auto.conf" 2>/dev/null | tail -1)
  [ -n "$port" ] || die "$1 holds no cluster made by this script (no port in $1/pgdata/postgresql.auto.conf)"
  echo "$port"
}

url_of() {
  local port
  port=$(port_of "$1") || exit 1
  echo "host=127.0.0.1 port=$port dbname=attestedge user=attestedge"
}

is_running() { as_owner "$PG_BIN/pg_ctl" -D "$1/pgdata" status >/dev/null 2>&1; }

start() {
  local dir=$1 port=${2:-}
  [ -x "$PG_BIN/initdb" ] || die "$PG_BIN/initdb not found: install Debian's postgresql package (apt-get install postgresql), or set ATTEST_PG_BIN"
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  if [ "$(id -u)" -eq 0 ]; then
    id "$PG_USER" >/dev/null 2>&1 || die "no '$PG_USER' system user (it comes with the postgresql package); initdb refuses root"
    chown "$PG_USER:" "$dir"
    chmod 0700 "$dir"
    as_owner test -w "$dir" || die "$PG_USER cannot write $dir: a directory above it does not let it through (try a directory under /tmp)"
  fi
  local fresh=0
  if [ ! -f "$dir/pgdata/PG_VERSION" ]; then
    fresh=1
    [ -n "$port" ] || port=$(free_port)
    # Trust for the unix socket and loopback (initdb's pg_hba allows only those).
    as_owner "$PG_BIN/initdb" -D "$dir/pgdata" -U "$PG_USER" --auth=trust -E UTF8 --locale=C.UTF-8 \
      --no-instructions >"$dir/initdb.log" 2>&1 || die "initdb failed; its output ($dir/initdb.log):
$(cat "$dir/initdb.log")"
    cat >>"$dir/pgdata/postgresql.auto.conf" <<EOF
port = $port
listen_addresses = '127.0.0.1'
unix_socket_directories = '$dir'
fsync = on
max_connections = 300
EOF
  elif [ -n "$port" ] && [ "$port" != "$(port_of "$dir")" ]; then
    echo "postgres.sh: $dir keeps the port it was made with ($(port_of "$dir")), not $port" >&2
  fi
  port=$(port_of "$dir") || exit 1
  if ! is_running "$dir"; then
    as_owner "$PG_BIN/pg_ctl" -D "$dir/pgdata" -l "$dir/postgres.log" -w -t 60 start >/dev/null 2>&1 \
      || die "the server did not start on 127.0.0.1:$port; $dir/postgres.log says:
$(tail -20 "$dir/postgres.log" 2>/dev/null)"
  fi
  # pg_ctl -w returns once the server accepts connections; check the TCP side too.
  local tries=0
  until as_owner "$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$port" -t 1; do
    tries=$((tries + 1))
    [ "$tries" -lt 100 ] || die "127.0.0.1:$port does not accept connections; see $dir/postgres.log"
    sleep 0.1
  done
  if [ "$fresh" = 1 ]; then
    as_owner "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$dir" -p "$port" -U "$PG_USER" -d postgres \
      -c "CREATE ROLE attestedge LOGIN CREATEDB" -c "CREATE DATABASE attestedge OWNER attestedge" >/dev/null \
      || die "could not create the attestedge role and database"
  fi
  url_of "$dir"
}

stop() {
  local dir=$1
  [ -d "$dir" ] || return 0
  [ -f "$dir/pgdata/PG_VERSION" ] || return 0
  if is_running "$dir"; then
    as_owner "$PG_BIN/pg_ctl" -D "$dir/pgdata" -m fast -w -t 60 stop >/dev/null \
      || die "the server in $dir did not stop; see $dir/postgres.log"
  fi
}

[ $# -ge 2 ] || usage
command=$1 dir=$2
case "$command" in
  start) [ $# -le 3 ] || usage; start "$dir" "${3:-}" ;;
  url) [ $# -eq 2 ] || usage; url_of "$dir" ;;
  stop) [ $# -eq 2 ] || usage; stop "$dir" ;;
  destroy) [ $# -eq 2 ] || usage; stop "$dir"; rm -rf "$dir" ;;
  *) usage ;;
esac
