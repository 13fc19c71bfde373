#!/usr/bin/env bash
# The monitoring stack end to end: the alert rules and the Prometheus config
# pass promtool (and the rules' unit tests); scripts/stack.sh brings up
# PostgreSQL, tcld, a worker and a real Prometheus (1 s scrapes) on free
# loopback ports; traffic goes through the API (a platform, uploads with bad
# lines, a replay, a train job and a failing one, predict, candidates, a
# sample request); both /metrics pass `promtool check metrics`; the counts
# Prometheus scraped match what the API answered; and every panel query of
# docker/grafana/tcl.json evaluates and returns data.
#
#   tests/deploy/dashboard_test.sh BUILD_DIR      (ctest: dashboard_test)
# KEEP=1 leaves the stack running and its directory in place.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:?usage: dashboard_test.sh BUILD_DIR}" && pwd)
data=$src/../shared/data/x86-16c/records.jsonl.gz
cd "$src"

fail() { echo "FAIL: $*" >&2; exit 1; }
step() { echo "== $*"; }

step "promtool: rules, rule unit tests, config"
promtool check rules docker/prometheus/alerts.yml
(cd docker/prometheus && promtool test rules alerts_test.yml)
promtool check config --syntax-only docker/prometheus/prometheus.yml

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
TCL_STACK_DIR=$(mktemp -d /tmp/tcl-stack-test-XXXXXX)
TCL_STACK_PG_PORT=$(free_port)
TCL_STACK_HTTP_PORT=$(free_port)
TCL_STACK_WORKER_PORT=$(free_port)
TCL_STACK_PROM_PORT=$(free_port)
export TCL_STACK_DIR TCL_STACK_PG_PORT TCL_STACK_HTTP_PORT TCL_STACK_WORKER_PORT TCL_STACK_PROM_PORT
# Names as label values (the checks below name platform x16 and alias production); the
# database-backed gauges read every 0.5 s so that they keep up with 1 s scrapes.
export TCL_BUILD_DIR=$build TCL_STACK_SCRAPE_INTERVAL=1s TCL_STACK_SERVE_FLAGS="--metrics-names --metrics-refresh-ms 500"
export TCL_STACK_WORKER_FLAGS="--train-threads 1 --job-lease-ms 10000 --metrics-names"
[[ $(id -u) -eq 0 ]] && chmod 755 "$TCL_STACK_DIR"
cleanup() {
  local rc=$?
  if [[ $rc -ne 0 ]]; then
    for f in tcld worker prometheus; do
      echo "---- $f.log (end) ----" >&2
      tail -15 "$TCL_STACK_DIR/$f.log" >&2 || true
    done
  fi
  if [[ -n "${KEEP:-}" ]]; then echo "kept: $TCL_STACK_DIR (scripts/stack.sh down to stop)"; return; fi
  scripts/stack.sh down >/dev/null || true
  rm -rf "$TCL_STACK_DIR"
}
trap cleanup EXIT

step "tcld worker --metrics-listen: a bad address is refused by name"
if out=$("$build/daemon/tcld" worker --metrics-listen nowhere 2>&1); then fail "worker accepted --metrics-listen nowhere"; fi
grep -q -- "--metrics-listen must be host:port" <<<"$out" || fail "worker: $out"

step "stack up"
scripts/stack.sh up
pids() { cat "$TCL_STACK_DIR"/{tcld,worker,prometheus}.pid | tr '\n' ' '; }
before=$(pids)
scripts/stack.sh up >/dev/null  # idempotent: nothing new starts
[[ $(pids) == "$before" ]] || fail "a second 'up' restarted something: $before -> $(pids)"
for pid in $before; do [[ -d /proc/$pid ]] || fail "pid $pid of the stack is gone"; done
promtool check config "$TCL_STACK_DIR/prometheus.yml" >/dev/null

api=http://127.0.0.1:$TCL_STACK_HTTP_PORT
prom=http://127.0.0.1:$TCL_STACK_PROM_PORT
token=$(cat "$TCL_STACK_DIR/admin-token")
work=$TCL_STACK_DIR/fixtures
mkdir -p "$work"
# call METHOD PATH [curl args...]: prints the body; fails on a status other than 2xx. Bodies are
# JSON unless a route streams them (uploads read any type), so say so: curl -d would send a form type.
call() {
  local method=$1 path=$2
  shift 2
  curl -sS --fail-with-body -X "$method" -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
    "$api$path" "$@"
}
json() { python3 -c "import json,sys; v=json.load(sys.stdin); print(eval(sys.argv[1]))" "$1"; }

step "fixtures: 1200 measured lines, 3 bad ones (one per reason class), 300 candidates"
python3 - "$data" "$work" <<'EOF'
import gzip, json, sys
# Every 16th line: all 18 tasks of the log, so training has an evaluation split.
lines = [l.rstrip("\n") for i, l in enumerate(gzip.open(sys.argv[1], "rt")) if i % 16 in (0, 8)]
measured, pool = lines[0::2][:1200], lines[1::2][:300]
with open(sys.argv[2] + "/measurements.jsonl", "w") as f:
    for l in measured:
        print(l, file=f)
    print('{"i": 1}', file=f)                                  # invalid_record
    r = json.loads(measured[0]); r["r"][0] = [0]
    print(json.dumps(r), file=f)                               # unmeasured
    r = json.loads(measured[1]); r["i"][0][2][0] = 32
    print(json.dumps(r), file=f)                               # hardware_mismatch
with open(sys.argv[2] + "/candidates.jsonl", "w") as f:
    for l in pool:
        r = json.loads(l); r["r"] = [[0], 0, 0, r["r"][3]]
        print(json.dumps(r), file=f)
with open(sys.argv[2] + "/predict.json", "w") as f:
    json.dump({"platform": "x16", "records": [json.loads(l) for l in measured[:64]]}, f)
EOF

step "traffic through the API"
call POST /v1/platforms \
  -d '{"name": "x16", "target": "llvm -keys=cpu -mtriple=x86_64-conda-linux-gnu", "hardware_params": [16, 64, 64, 0, 0, 0, 0, 0]}' >/dev/null
report=$(call POST /v1/platforms/x16/measurements --data-binary @"$work/measurements.jsonl")
accepted=$(json 'v["accepted"]' <<<"$report")
[[ $(json 'v["rejected_count"]' <<<"$report") == 3 && $accepted -gt 1000 ]] || fail "upload report: $report"
call POST /v1/platforms/x16/measurements --data-binary @"$work/measurements.jsonl" >/dev/null  # a replay
gzip -c "$work/candidates.jsonl" | call POST /v1/platforms/x16/candidates -H 'Content-Encoding: gzip' \
  --data-binary @- >/dev/null
candidates=$(call GET /v1/platforms/x16 | json 'v["counts"]["candidates"]')
[[ $candidates -gt 250 ]] || fail "only $candidates candidates stored"
job=$(call POST /v1/platforms/x16/jobs -d '{"kind": "train", "epochs": 2, "max_records": 600, "eval_fraction": 0.25, "seed": 1}' |
  json 'v["id"]')
# A job that fails in the worker (a typo in an option is refused at POST; an unknown init alias is not).
bad=$(call POST /v1/platforms/x16/jobs -d '{"kind": "train", "init": "no-such-alias"}' | json 'v["id"]')
for _ in $(seq 600); do
  state=$(call GET "/v1/jobs/$job" | json 'v["state"]')
  bad_state=$(call GET "/v1/jobs/$bad" | json 'v["state"]')
  [[ $state != queued && $state != running && $bad_state == failed ]] && break
  sleep 0.2
done
[[ $state == succeeded && $bad_state == failed ]] || fail "jobs: $job is $state, $bad is $bad_state"
# The worker learns of production only through the database; tcld through NOTIFY.
for _ in $(seq 100); do
  code=$(curl -s -o "$work/predict.out" -w '%{http_code}' -H "Authorization: Bearer $token" \
    -H 'Content-Type: application/json' "$api/v1/predict" -d @"$work/predict.json")
  [[ $code == 200 ]] && break
  sleep 0.1
done
[[ $code == 200 ]] || fail "predict: $code $(cat "$work/predict.out")"
request=$(call POST /v1/platforms/x16/sample-requests -d '{"budget": 20, "seed": 1}' | json 'v["id"]')
call GET "/v1/sample-requests/$request" >/dev/null
curl -s -o /dev/null "$api/v1/no-such-route"  # a 404 for the status-code panel

step "promtool check metrics: tcld and worker"
curl -sf "$api/metrics" | promtool check metrics
curl -sf "http://127.0.0.1:$TCL_STACK_WORKER_PORT/metrics" | promtool check metrics

# query EXPR: the single value Prometheus has for EXPR now ("" when none).
query() {
  curl -sf "$prom/api/v1/query" --data-urlencode "query=$1" |
    python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if len(r)==1 else "")'
}
# expect EXPR VALUE: waits (scrapes are 1 s apart) until EXPR equals VALUE.
expect() {
  local got=
  for _ in $(seq 100); do
    got=$(query "$1")
    [[ $got == "$2" ]] && return 0
    sleep 0.1
  done
  fail "$1 = '$got', expected $2"
}

step "what Prometheus scraped matches what the API answered"
expect 'up{job="tcld"}' 1
expect 'up{job="tcld-worker"}' 1
expect 'sum(tcld_upload_rejected_lines_total{kind="measurements"})' 3
for reason in invalid_record unmeasured hardware_mismatch; do
  expect "tcld_upload_rejected_lines_total{kind=\"measurements\",reason=\"$reason\"}" 1
done
expect 'tcld_upload_lines_total{kind="measurements",result="accepted"}' "$accepted"
expect 'tcld_uploads_total{kind="measurements",outcome="replayed"}' 1
expect 'tcld_onboarding_measurements{platform="x16"}' "$accepted"
expect 'tcld_onboarding_candidates{platform="x16"}' "$candidates"
expect 'tcld_onboarding_sample_requests{platform="x16"}' 1
expect 'tcld_onboarding_items_to_measure{platform="x16"}' 20
expect 'tcld_jobs{state="failed"}' 1
expect 'tcld_training_jobs_finished_total{job="tcld-worker",kind="train",outcome="succeeded"}' 1
expect 'tcld_training_epoch{platform="x16"} / tcld_training_epochs{platform="x16"}' 1
expect 'tcld_model_alias_version{alias="production"}' 1
[[ $(curl -sf "$prom/api/v1/rules" | json 'sum(len(g["rules"]) for g in v["data"]["groups"])') == 5 ]] ||
  fail "Prometheus did not load the 5 alert rules"

step "every panel of docker/grafana/tcl.json returns data"
sleep 2  # rate() needs two scrapes after the last request
python3 tests/deploy/query_panels.py docker/grafana/tcl.json "$prom" --rate-interval 1m

step "down stops everything"
scripts/stack.sh down
! curl -sf -o /dev/null "$api/healthz" || fail "tcld still answers after down"
! curl -sf -o /dev/null "$prom/-/ready" || fail "Prometheus still answers after down"
echo "PASS"
