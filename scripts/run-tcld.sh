#!/usr/bin/env bash
# Runs tcld on its embedded default: a local PostgreSQL cluster under
# ${TCL_DATA_DIR:-var} (created on the first run, reused after), migrations
# applied, tcld serving on 127.0.0.1:8080. The first run prints an admin
# token (kept in $TCL_DATA_DIR/admin-token, readable by root only).
#
#   scripts/run-tcld.sh [tcld serve flags]    e.g. --listen 127.0.0.1:9090
#   scripts/run-tcld.sh stop-db               stop the local PostgreSQL
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
data=${TCL_DATA_DIR:-$root/var}
port=${TCL_PG_PORT:-54329}
pgbin=/usr/lib/postgresql/15/bin
as_pg() { if [[ $(id -u) -eq 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi; }

if [[ "${1:-}" == "stop-db" ]]; then
  as_pg "$pgbin/pg_ctl" -D "$data/pg" -m fast stop
  exit 0
fi

scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build --target tcld tclctl tcl-measure

mkdir -p "$data"

if [[ ! -f "$data/pg/PG_VERSION" ]]; then
  echo "run-tcld: creating a PostgreSQL cluster in $data/pg"
  mkdir -p "$data/pg" "$data/run"
  [[ $(id -u) -eq 0 ]] && chown postgres:postgres "$data/pg" "$data/run"
  as_pg "$pgbin/initdb" -D "$data/pg" -U postgres -A trust -E UTF8 >"$data/initdb.log"
fi
[[ $(id -u) -eq 0 ]] && chown postgres:postgres "$data/run"
if ! as_pg "$pgbin/pg_ctl" -D "$data/pg" status >/dev/null 2>&1; then
  as_pg "$pgbin/pg_ctl" -D "$data/pg" -l "$data/run/postgres.log" -w \
    -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$data/run" start >/dev/null
fi
url="postgresql://postgres@127.0.0.1:$port/postgres"
psql -q "$url" -tc "SELECT 1 FROM pg_database WHERE datname = 'tcl'" | grep -q 1 ||
  psql -q "$url" -c "CREATE DATABASE tcl" >/dev/null
export TCLD_DATABASE_URL="postgresql://postgres@127.0.0.1:$port/tcl"

build/daemon/tcld migrate
if [[ ! -s "$data/admin-token" ]]; then
  (umask 077; build/daemon/tcld token create --name admin --scope admin >"$data/admin-token")
  echo "run-tcld: admin token (also in $data/admin-token): $(cat "$data/admin-token")"
fi
echo "run-tcld: tcld on http://127.0.0.1:8080 — database $TCLD_DATABASE_URL; Ctrl-C stops tcld (PostgreSQL keeps running: scripts/run-tcld.sh stop-db)"
exec build/daemon/tcld serve "$@"
