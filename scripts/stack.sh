#!/usr/bin/env bash
# The monitoring stack without containers, on loopback: PostgreSQL, `tcld
# serve`, one `tcld worker` (serving /metrics) and a real Prometheus with the
# compose stack's files (docker/prometheus/). Everything lives under
# ${TCL_STACK_DIR:-var/stack} and survives `down` (data, token, ports); `up`
# again starts what is not running and leaves the rest alone.
#
#   scripts/stack.sh up       start what is not running; print URLs and the admin token
#   scripts/stack.sh status   what runs, where
#   scripts/stack.sh down     stop Prometheus, the worker, tcld and PostgreSQL
#
# Prometheus config: the loopback copy $TCL_STACK_DIR/prometheus.yml is
# docker/prometheus/prometheus.yml with the targets rewritten (tcld:8080 →
# 127.0.0.1:$TCL_STACK_HTTP_PORT; the DNS lookup of the compose `worker`
# service → 127.0.0.1:$TCL_STACK_WORKER_PORT) and the rules path made
# absolute (docker/prometheus/alerts.yml itself); TCL_STACK_SCRAPE_INTERVAL,
# when set, replaces both intervals. Nothing else differs.
#
# Environment (ports are remembered in $TCL_STACK_DIR/ports.env):
#   TCL_BUILD_DIR             where tcld was built (default build)
#   TCL_STACK_PG_PORT         PostgreSQL (default 54330)
#   TCL_STACK_HTTP_PORT       tcld serve (default 8080)
#   TCL_STACK_WORKER_PORT     tcld worker's /metrics (default 9464)
#   TCL_STACK_PROM_PORT       Prometheus (default 9090)
#   TCL_STACK_SCRAPE_INTERVAL e.g. 1s (tests); default as in prometheus.yml
#   TCL_STACK_SERVE_FLAGS, TCL_STACK_WORKER_FLAGS   extra tcld flags
# Needs tcld built (cmake --build build --target tcld) and the Debian
# packages of scripts/install-deps.sh (postgresql, prometheus).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
dir=${TCL_STACK_DIR:-var/stack}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
build=$(cd "${TCL_BUILD_DIR:-build}" 2>/dev/null && pwd || echo "${TCL_BUILD_DIR:-build}")
tcld=$build/daemon/tcld
pgbin=/usr/lib/postgresql/15/bin
as_pg() { if [[ $(id -u) -eq 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi; }
say() { echo "stack: $*"; }

# Explicit environment first, then what the last `up` used, then defaults.
saved_pg_port='' saved_http_port='' saved_worker_port='' saved_prom_port=''
# shellcheck disable=SC1091
[[ -f "$dir/ports.env" ]] && source "$dir/ports.env"
pg_port=${TCL_STACK_PG_PORT:-${saved_pg_port:-54330}}
http_port=${TCL_STACK_HTTP_PORT:-${saved_http_port:-8080}}
worker_port=${TCL_STACK_WORKER_PORT:-${saved_worker_port:-9464}}
prom_port=${TCL_STACK_PROM_PORT:-${saved_prom_port:-9090}}
db_url="postgresql://postgres@127.0.0.1:$pg_port/tcl"

# pid of a component started by this script, if it still runs that binary.
running() {
  local pidfile=$dir/$1.pid pid
  [[ -f "$pidfile" ]] || return 1
  pid=$(cat "$pidfile")
  [[ -n "$pid" && -r /proc/$pid/cmdline ]] || return 1
  tr '\0' ' ' </proc/"$pid"/cmdline | grep -q -- "$2" || return 1
  echo "$pid"
}

wait_http() {  # URL NAME LOG: polls for up to 30 s
  for _ in $(seq 300); do
    curl -sf -o /dev/null "$1" && return 0
    sleep 0.1
  done
  say "$2 did not come up; the end of $3:" >&2
  tail -20 "$3" >&2
  return 1
}

pg_up() {
  if [[ ! -f "$dir/pg/PG_VERSION" ]]; then
    mkdir -p "$dir/pg"
    [[ $(id -u) -eq 0 ]] && chown postgres:postgres "$dir/pg"
    as_pg "$pgbin/initdb" -D "$dir/pg" -U postgres -A trust -E UTF8 >"$dir/initdb.log"
  fi
  mkdir -p "$dir/run"
  [[ $(id -u) -eq 0 ]] && chown postgres:postgres "$dir/run"
  if ! as_pg "$pgbin/pg_ctl" -D "$dir/pg" status >/dev/null 2>&1; then
    as_pg "$pgbin/pg_ctl" -D "$dir/pg" -l "$dir/run/postgres.log" -w \
      -o "-c listen_addresses=127.0.0.1 -c port=$pg_port -c unix_socket_directories=$dir/run" start >/dev/null
  fi
  local admin="postgresql://postgres@127.0.0.1:$pg_port/postgres"
  psql -q "$admin" -tc "SELECT 1 FROM pg_database WHERE datname = 'tcl'" | grep -q 1 ||
    psql -q "$admin" -c "CREATE DATABASE tcl" >/dev/null
}

prometheus_config() {
  local interval=${TCL_STACK_SCRAPE_INTERVAL:-}
  sed -e "s/'tcld:8080'/'127.0.0.1:$http_port'/" \
      -e "/^    dns_sd_configs:/,/^        port: 9464/c\\    static_configs:\n      - targets: ['127.0.0.1:$worker_port']" \
      -e "s|^  - alerts.yml$|  - $root/docker/prometheus/alerts.yml|" \
      ${interval:+-e "s/^  scrape_interval: .*/  scrape_interval: $interval/"} \
      ${interval:+-e "s/^  evaluation_interval: .*/  evaluation_interval: $interval/"} \
      docker/prometheus/prometheus.yml >"$dir/prometheus.yml"
  # The rewrite must have hit every target: a compose file that changed
  # under us would otherwise scrape nothing, silently.
  if grep -q -e "'tcld:8080'" -e "dns_sd_configs" -e "^  - alerts.yml" "$dir/prometheus.yml"; then
    say "could not rewrite docker/prometheus/prometheus.yml for loopback" >&2
    return 1
  fi
}

up() {
  [[ -x "$tcld" ]] || { say "no $tcld: build it first (cmake --build ${TCL_BUILD_DIR:-build} --target tcld)" >&2; exit 1; }
  command -v prometheus >/dev/null || { say "prometheus is missing: scripts/install-deps.sh" >&2; exit 1; }
  printf 'saved_pg_port=%s\nsaved_http_port=%s\nsaved_worker_port=%s\nsaved_prom_port=%s\n' \
    "$pg_port" "$http_port" "$worker_port" "$prom_port" >"$dir/ports.env"
  pg_up
  export TCLD_DATABASE_URL=$db_url
  if [[ ! -s "$dir/admin-token" ]]; then  # token create applies the migrations first
    (umask 077; "$tcld" token create --name "stack-admin-$(date +%s)" --scope admin >"$dir/admin-token" 2>"$dir/token.log")
  fi
  if ! running tcld "$tcld serve" >/dev/null; then
    # shellcheck disable=SC2086
    setsid "$tcld" serve --listen "127.0.0.1:$http_port" --train-workers 0 ${TCL_STACK_SERVE_FLAGS:-} \
      </dev/null >>"$dir/tcld.log" 2>&1 &
    echo $! >"$dir/tcld.pid"
    wait_http "http://127.0.0.1:$http_port/healthz" tcld "$dir/tcld.log"
  fi
  if ! running worker "$tcld worker" >/dev/null; then
    # shellcheck disable=SC2086
    setsid "$tcld" worker --metrics-listen "127.0.0.1:$worker_port" ${TCL_STACK_WORKER_FLAGS:-} \
      </dev/null >>"$dir/worker.log" 2>&1 &
    echo $! >"$dir/worker.pid"
    wait_http "http://127.0.0.1:$worker_port/healthz" worker "$dir/worker.log"
  fi
  if ! running prometheus "prometheus --config.file=$dir/prometheus.yml" >/dev/null; then
    prometheus_config
    mkdir -p "$dir/prometheus-data"
    setsid prometheus --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/prometheus-data" \
      --web.listen-address="127.0.0.1:$prom_port" --web.enable-lifecycle \
      </dev/null >>"$dir/prometheus.log" 2>&1 &
    echo $! >"$dir/prometheus.pid"
    wait_http "http://127.0.0.1:$prom_port/-/ready" prometheus "$dir/prometheus.log"
  fi
  status
  echo "export TCL_URL=http://127.0.0.1:$http_port TCL_TOKEN=$(cat "$dir/admin-token")"
}

stop() {  # NAME PATTERN
  local pid
  pid=$(running "$1" "$2") || return 0
  kill "$pid"
  for _ in $(seq 200); do
    [[ -d /proc/$pid ]] || break
    sleep 0.1
  done
  if [[ -d /proc/$pid ]]; then
    say "$1 (pid $pid) ignored SIGTERM for 20 s; killing it"
    kill -9 "$pid"
  fi
  rm -f "$dir/$1.pid"
}

down() {
  stop prometheus "prometheus --config.file=$dir/prometheus.yml"
  stop worker "$tcld worker"
  stop tcld "$tcld serve"
  if [[ -f "$dir/pg/PG_VERSION" ]]; then
    as_pg "$pgbin/pg_ctl" -D "$dir/pg" -m fast stop >/dev/null 2>&1 || true
  fi
  say "stopped (data kept in $dir)"
}

status() {
  local pg=stopped
  [[ -f "$dir/pg/PG_VERSION" ]] && as_pg "$pgbin/pg_ctl" -D "$dir/pg" status >/dev/null 2>&1 && pg=running
  show() { printf '  %-11s %-8s %s\n' "$1" "$2" "$3"; }
  say "$dir"
  show postgresql "$pg" "$db_url"
  show tcld "$(running tcld "$tcld serve" >/dev/null && echo running || echo stopped)" "http://127.0.0.1:$http_port"
  show worker "$(running worker "$tcld worker" >/dev/null && echo running || echo stopped)" \
    "http://127.0.0.1:$worker_port/metrics"
  show prometheus "$(running prometheus "prometheus --config.file" >/dev/null && echo running || echo stopped)" \
    "http://127.0.0.1:$prom_port (alerts: /alerts)"
  [[ -s "$dir/admin-token" ]] && show token "admin" "$(cat "$dir/admin-token") (in $dir/admin-token)"
  return 0
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) status ;;
  *) echo "usage: scripts/stack.sh up|down|status" >&2; exit 2 ;;
esac
