# bench/lib/stack.sh — sourced by the bench scripts: a throwaway PostgreSQL
# cluster and one tcld on free loopback ports, removed on exit.
#   stack_start BUILD_DIR [tcld serve flags...]
# sets: stack_dir, pg_port, http_port, base_url, token (admin), tcld_pid,
#       postmaster, and exports TCLD_DATABASE_URL.
# Environment: PG_OPTS adds server settings; KEEP=1 keeps the directory.
pgbin=/usr/lib/postgresql/15/bin
as_pg() { if [[ $(id -u) -eq 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

stack_stop() {
  [[ -n "${tcld_pid:-}" ]] && kill "$tcld_pid" 2>/dev/null && wait "$tcld_pid" 2>/dev/null
  tcld_pid=
  [[ -n "${stack_dir:-}" ]] || return 0
  as_pg "$pgbin/pg_ctl" -D "$stack_dir/data" -m fast stop >/dev/null 2>&1 || true
  if [[ -n "${KEEP:-}" ]]; then echo "kept $stack_dir"; else rm -rf "$stack_dir"; fi
  stack_dir=
}

stack_start() {
  local build=$1
  shift
  stack_dir=$(mktemp -d /tmp/tcl-bench-XXXXXX)
  [[ $(id -u) -eq 0 ]] && chown postgres "$stack_dir"
  pg_port=$(free_port)
  http_port=$(free_port)
  base_url="http://127.0.0.1:$http_port"
  as_pg "$pgbin/initdb" -D "$stack_dir/data" -U postgres -A trust >/dev/null
  as_pg "$pgbin/pg_ctl" -D "$stack_dir/data" -l "$stack_dir/pg.log" -w \
    -o "-c listen_addresses=127.0.0.1 -c port=$pg_port -c unix_socket_directories=$stack_dir ${PG_OPTS:-}" \
    start >/dev/null
  postmaster=$(head -1 "$stack_dir/data/postmaster.pid")
  export TCLD_DATABASE_URL="postgresql://postgres@127.0.0.1:$pg_port/postgres"
  token=$("$build/daemon/tcld" token create --name bench --scope admin 2>/dev/null)
  "$build/daemon/tcld" serve --listen "127.0.0.1:$http_port" --log-level warn "$@" 2>"$stack_dir/tcld.log" &
  tcld_pid=$!
  for _ in $(seq 100); do curl -sf "$base_url/healthz" >/dev/null && return 0; sleep 0.1; done
  echo "tcld did not start:" >&2
  cat "$stack_dir/tcld.log" >&2
  return 1
}

# stack_call METHOD PATH [BODY]: an authenticated JSON call; prints the body.
stack_call() {
  curl -sf -X"$1" -H "Authorization: Bearer $token" -H "Content-Type: application/json" \
    "$base_url$2" ${3:+-d "$3"}
}
