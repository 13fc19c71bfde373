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
source bench/lib/stack.sh
trap stack_stop EXIT
stack_start "$build"
curl -sf -XPOST -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
  "http://127.0.0.1:$http_port/v1/platforms" \
  -d '{"name":"bench","target":"llvm -keys=cpu","hardware_params":[24,64,64,0,0,0,0,0]}' >/dev/null

echo "== GET /healthz (wrk -t2 -c64 -d${secs}s)"
wrk -t2 -c64 -d"${secs}s" --latency "http://127.0.0.1:$http_port/healthz" | grep -E "Requests/sec|99%|50%|Non-2xx"
echo "== GET /v1/platforms/bench (wrk -t2 -c64 -d${secs}s)"
wrk -t2 -c64 -d"${secs}s" --latency -H "Authorization: Bearer $token" \
  "http://127.0.0.1:$http_port/v1/platforms/bench" | grep -E "Requests/sec|99%|50%|Non-2xx"
