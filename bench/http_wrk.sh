#!/usr/bin/env bash
# HTTP throughput of tcld on loopback with wrk (2 threads, 64 connections,
# bounded duration): GET /healthz and GET /v1/platforms/{name}.
# Self-contained: a throwaway PostgreSQL cluster and tcld are started and
# removed. Run after a Release build:
#   cmake -S . -B build-release -G Ninja -DCMAKE_BUILD_TYPE=Release && ninja -C build-release tcld
#   bench/http_wrk.sh [build-release] [seconds]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-release}
secs=${2:-10}
pgbin=/usr/lib/postgresql/15/bin
dir=$(mktemp -d /tmp/tcl-bench-XXXXXX)
as_pg() { if [[ $(id -u) -eq 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi; }
[[ $(id -u) -eq 0 ]] && chown postgres "$dir"
pg_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
http_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cleanup() {
  [[ -n "${tcld_pid:-}" ]] && kill "$tcld_pid" 2>/dev/null && wait "$tcld_pid" 2>/dev/null
  as_pg "$pgbin/pg_ctl" -D "$dir/data" -m fast stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT
as_pg "$pgbin/initdb" -D "$dir/data" -U postgres -A trust >/dev/null
as_pg "$pgbin/pg_ctl" -D "$dir/data" -l "$dir/pg.log" -w \
  -o "-c listen_addresses=127.0.0.1 -c port=$pg_port -c unix_socket_directories=$dir" start >/dev/null
export TCLD_DATABASE_URL="postgresql://postgres@127.0.0.1:$pg_port/postgres"
token=$("$build/daemon/tcld" token create --name bench --scope admin 2>/dev/null)
"$build/daemon/tcld" serve --listen "127.0.0.1:$http_port" --log-level warn 2>"$dir/tcld.log" &
tcld_pid=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$http_port/healthz" >/dev/null && break; sleep 0.1; done
curl -sf -XPOST -H "Authorization: Bearer $token" "http://127.0.0.1:$http_port/v1/platforms" \
  -d '{"name":"bench","target":"llvm -keys=cpu","hardware_params":[24,64,64,0,0,0,0,0]}' >/dev/null

echo "== GET /healthz (wrk -t2 -c64 -d${secs}s)"
wrk -t2 -c64 -d"${secs}s" --latency "http://127.0.0.1:$http_port/healthz" | grep -E "Requests/sec|99%|50%|Non-2xx"
echo "== GET /v1/platforms/bench (wrk -t2 -c64 -d${secs}s)"
wrk -t2 -c64 -d"${secs}s" --latency -H "Authorization: Bearer $token" \
  "http://127.0.0.1:$http_port/v1/platforms/bench" | grep -E "Requests/sec|99%|50%|Non-2xx"
