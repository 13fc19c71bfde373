#!/usr/bin/env bash
# GET /v1/platforms/{name} on a platform holding a whole records file (issue
# 18, finding 3): the counts are read from platform_counts, so the route
# should not slow down with the platform's size.
# Self-contained: a throwaway PostgreSQL cluster and tcld (bench/lib/stack.sh);
# the file is uploaded with `tclctl upload` first (not timed here: see
# upload_e2e.sh), then three single GETs are timed with curl and wrk runs
# on the route (2 threads, 64 connections).
#   cmake -S . -B build-release -G Ninja -DCMAKE_BUILD_TYPE=Release -DTCL_BUILD_TESTS=OFF
#   ninja -C build-release -j2 tcld tclctl
#   bench/platform_show_wrk.sh [build-release] [records.jsonl.gz] [seconds]
# WRK_OPTS replaces wrk's "-t2 -c64" (e.g. "-t1 -c4 --timeout 30s" for a
# build whose GET takes seconds); WRK=0 skips wrk.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-release}
records=${2:-/work/shared/data/x86-24c/records.jsonl.gz}
secs=${3:-10}
source bench/lib/stack.sh
trap stack_stop EXIT
stack_start "$build"
name=x86-24c
stack_call POST /v1/platforms \
  "{\"name\":\"$name\",\"target\":\"llvm -keys=cpu -mtriple=x86_64-conda-linux-gnu\",\"hardware_params\":[24,64,64,0,0,0,0,0]}" \
  >/dev/null
TCL_URL="$base_url" TCL_TOKEN="$token" "$build/tools/tclctl" upload --quiet --platform "$name" "$records"
url="$base_url/v1/platforms/$name"
echo "== counts: $(stack_call GET "/v1/platforms/$name" | python3 -c 'import json,sys; print(json.load(sys.stdin)["counts"])')"

for i in 1 2 3; do
  curl -sf -o /dev/null -w "== one GET: %{time_total} s\n" -H "Authorization: Bearer $token" "$url"
done
if [[ "${WRK:-1}" != 0 ]]; then
  opts=${WRK_OPTS:--t2 -c64}
  echo "== GET /v1/platforms/$name (wrk $opts -d${secs}s)"
  wrk $opts -d"${secs}s" --latency -H "Authorization: Bearer $token" "$url" |
    grep -E "Requests/sec|^ +50%|^ +99%|Non-2xx|Socket errors"
fi
