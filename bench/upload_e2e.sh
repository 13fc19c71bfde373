#!/usr/bin/env bash
# End-to-end upload throughput: `tclctl upload` of a whole records file
# through tcld into PostgreSQL (batches of 50k lines, one upload each), with
# tcld's resident memory sampled every 0.2 s.
# Self-contained: a throwaway PostgreSQL cluster (server defaults) and tcld
# are started on free loopback ports and removed. Run after a Release build
# of tcld and tclctl (add -DTCL_BUILD_TRAINER=ON where daemon/ needs trainer/):
#   cmake -S . -B build-release -G Ninja -DCMAKE_BUILD_TYPE=Release -DTCL_BUILD_TESTS=OFF -DTCL_BUILD_TRAINER=OFF
#   ninja -C build-release -j2 tcld tclctl
#   bench/upload_e2e.sh [build-release] [records.jsonl.gz]
# Prints records/s, tcld's start and peak RSS, and the CPU seconds of tcld,
# of this cluster's PostgreSQL processes and of tclctl (on a shared machine
# these say more than wall time about what a change saves).
# Environment: PERF=DIR records `perf record -g` of tcld (DIR/tcld.perf.data)
# and of every postgres process of the machine (DIR/pg.perf.data) during the
# upload; PG_OPTS adds server settings ("-c shared_buffers=1GB ...");
# KEEP=1 keeps the cluster directory for a look afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-release}
records=${2:-/work/shared/data/x86-24c/records.jsonl.gz}
source bench/lib/stack.sh
cleanup() {
  [[ -n "${sampler_pid:-}" ]] && kill "$sampler_pid" 2>/dev/null
  stack_stop
}
trap cleanup EXIT
stack_start "$build"
dir=$stack_dir
curl -sf -XPOST -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
  "http://127.0.0.1:$http_port/v1/platforms" \
  -d '{"name":"x86-24c","target":"llvm -keys=cpu -mtriple=x86_64-conda-linux-gnu","hardware_params":[24,64,64,0,0,0,0,0]}' \
  >/dev/null

# VmRSS of tcld in kB, one sample a line, every 0.2 s until killed.
rss() { awk '/^VmRSS:/ {print $2}' "/proc/$tcld_pid/status" 2>/dev/null; }
start_rss=$(rss)
( while :; do rss; sleep 0.2; done ) >"$dir/rss.txt" &
sampler_pid=$!

perf_pids=()
if [[ -n "${PERF:-}" ]]; then
  mkdir -p "$PERF"
  perf record -g -o "$PERF/tcld.perf.data" -p "$tcld_pid" >/dev/null 2>&1 &
  perf_pids+=($!)
  perf record -g -o "$PERF/pg.perf.data" -u postgres >/dev/null 2>&1 &
  perf_pids+=($!)
fi

# CPU seconds (user + system) of processes (their /proc/PID/stat files); the
# cluster's are its postmaster and the postmaster's children.
cpu_of() { awk -v t="$(getconf CLK_TCK)" '{ split($0, a, ") "); split(a[2], f, " "); s += (f[12] + f[13]) / t } END { printf "%.2f", s }' "$@" 2>/dev/null; }
pg_cpu() { cpu_of $(for p in "$postmaster" $(pgrep -P "$postmaster"); do echo "/proc/$p/stat"; done); }
records_n=$(zcat "$records" | wc -l)
tcld_cpu0=$(cpu_of /proc/$tcld_pid/stat)
pg_cpu0=$(pg_cpu)
t0=$(date +%s.%N)
TCL_URL="http://127.0.0.1:$http_port" TCL_TOKEN="$token" /usr/bin/time -f "%U %S" -o "$dir/tclctl.time" \
  "$build/tools/tclctl" upload --quiet --platform x86-24c "$records"
t1=$(date +%s.%N)
tcld_cpu1=$(cpu_of /proc/$tcld_pid/stat)
pg_cpu1=$(pg_cpu)
for p in "${perf_pids[@]}"; do kill -INT "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
kill "$sampler_pid" 2>/dev/null; wait "$sampler_pid" 2>/dev/null || true
sampler_pid=

stored=$(psql -qAt "$TCLD_DATABASE_URL" -c "SELECT count(*) FROM measurements")
peak_rss=$(sort -n "$dir/rss.txt" | tail -1)
python3 - "$records_n" "$stored" "$t0" "$t1" "$start_rss" "${peak_rss:-$start_rss}" \
  "$tcld_cpu0" "$tcld_cpu1" "$pg_cpu0" "$pg_cpu1" "$(cat "$dir/tclctl.time")" <<'EOF'
import sys
n, stored, t0, t1, start, peak = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
tcld = float(sys.argv[8]) - float(sys.argv[7])
pg = float(sys.argv[10]) - float(sys.argv[9])
tclctl = sum(float(x) for x in sys.argv[11].split())
secs = t1 - t0
print(f"records: {n}  stored measurements: {stored}")
print(f"upload: {secs:.2f} s  {n / secs:,.0f} records/s")
print(f"cpu: tcld {tcld:.1f} s ({1e6 * tcld / n:.1f} us/record), postgres {pg:.1f} s ({1e6 * pg / n:.1f} us/record), "
      f"tclctl {tclctl:.1f} s ({1e6 * tclctl / n:.1f} us/record)")
print(f"tcld RSS: start {start / 1024:.1f} MB  peak {peak / 1024:.1f} MB  growth {(peak - start) / 1024:.1f} MB")
EOF
