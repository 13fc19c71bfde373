#!/usr/bin/env bash
# POST /v1/predict throughput through tcld (programs/s), batches of 512 and
# 4096 real records, 1, 2 and 4 connections (wrk, bounded duration).
# Self-contained (bench/lib/stack.sh): a throwaway cluster and tcld; the
# served model is a default student trained by a real job (1 epoch on the
# first 20k records), so the weights are what a deployment serves.
# Run after a Release build:
#   cmake -S . -B build-release -G Ninja -DCMAKE_BUILD_TYPE=Release -DTCL_BUILD_TESTS=OFF
#   ninja -C build-release tcld tclctl
#   bench/predict_http.sh [build-release] [records.jsonl.gz] [seconds]
# Extra tcld flags via TCLD_FLAGS (e.g. "--predict-threads 1").
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-release}
records=${2:-/work/shared/data/x86-24c/records.jsonl.gz}
secs=${3:-10}
source bench/lib/stack.sh
trap stack_stop EXIT
# shellcheck disable=SC2086
stack_start "$build" ${TCLD_FLAGS:-}
stack_call POST /v1/platforms \
  '{"name":"bench","target":"llvm -keys=cpu -mtriple=x86_64-conda-linux-gnu","hardware_params":[24,64,64,0,0,0,0,0]}' >/dev/null
python3 -c 'import gzip,sys,itertools; sys.stdout.writelines(itertools.islice(gzip.open(sys.argv[1],"rt"),24096))' \
  "$records" >"$stack_dir/lines.jsonl"
head -n 20000 "$stack_dir/lines.jsonl" >"$stack_dir/train.jsonl"
TCL_URL=$base_url TCL_TOKEN=$token "$build/tools/tclctl" upload --quiet --platform bench "$stack_dir/train.jsonl" >/dev/null
job=$(stack_call POST /v1/platforms/bench/jobs '{"kind":"train","epochs":1,"max_records":8000}' |
      python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
for _ in $(seq 600); do
  state=$(stack_call GET "/v1/jobs/$job" | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')
  [[ $state == succeeded ]] && break
  [[ $state == failed || $state == cancelled ]] && { echo "train job $state" >&2; exit 1; }
  sleep 1
done
[[ $state == succeeded ]] || { echo "train job did not finish" >&2; exit 1; }
for _ in $(seq 100); do curl -sf "$base_url/readyz" >/dev/null && break; sleep 0.1; done

cat >"$stack_dir/post.lua" <<'LUA'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("TOKEN")
local f = assert(io.open(os.getenv("BODY"), "rb"))
wrk.body = f:read("*a")
f:close()
LUA
cpu_of() { awk -v t="$(getconf CLK_TCK)" '{ split($0, a, ") "); split(a[2], f, " "); printf "%.2f", (f[12] + f[13]) / t }' "$1"; }
echo "| batch | connections | requests/s | programs/s | p50 | p99 | tcld CPU-s per 1k programs |"
echo "|---|---|---|---|---|---|---|"
for batch in 512 4096; do
  sed -n "20001,$((20000 + batch))p" "$stack_dir/lines.jsonl" |
    python3 -c 'import sys; print("{\"platform\":\"bench\",\"records\":[" + ",".join(l.strip() for l in sys.stdin) + "]}")' \
    >"$stack_dir/body.json"
  # One call first: it must answer 200 with one score per record.
  n=$(curl -sf -XPOST -H "Authorization: Bearer $token" -H 'Content-Type: application/json' --data-binary "@$stack_dir/body.json" "$base_url/v1/predict" |
      python3 -c 'import json,sys,math; s=json.load(sys.stdin)["scores"]; assert all(map(math.isfinite,s)); print(len(s))')
  [[ $n == "$batch" ]] || { echo "predict gave $n scores for $batch records" >&2; exit 1; }
  for conns in 1 2 4; do
    c0=$(cpu_of "/proc/$tcld_pid/stat")
    out=$(TOKEN=$token BODY=$stack_dir/body.json wrk -t1 -c"$conns" -d"${secs}s" --latency -s "$stack_dir/post.lua" \
          "$base_url/v1/predict")
    c1=$(cpu_of "/proc/$tcld_pid/stat")
    if grep -q "Non-2xx" <<<"$out"; then echo "errors: $out" >&2; exit 1; fi
    python3 - "$batch" "$conns" "$c0" "$c1" <<PY
import re, sys
out = """$out"""
batch, conns, c0, c1 = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
total = int(re.search(r"(\d+) requests in", out).group(1))
p50 = re.search(r"50%\s+(\S+)", out).group(1)
p99 = re.search(r"99%\s+(\S+)", out).group(1)
print(f"| {batch} | {conns} | {rps:,.1f} | {rps * batch:,.0f} | {p50} | {p99} | {1000 * (c1 - c0) / max(1, total * batch):.3f} |")
PY
  done
done
