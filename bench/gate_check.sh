#!/usr/bin/env bash
# bench/gate_check.sh — does the default distill keep its old platform? (issue 19 item 4, the product
# path's "the default job's version is promoted"). bench_train's default train job on gpu-v100, its
# student distill ("method": "student"; the adapter and best-of, the default, leave gpu-v100's model as it was) into tests/data/gpu-h100, then bench_gate (the promotion gate's paired comparison) of
# student against teacher on all of gpu-v100's measured tasks. The same calls tcld's job worker makes,
# without the database.
#   bench/gate_check.sh BUILD_DIR LOGS_DIR
# Environment (each optional):
#   DATA            the platforms' folders (default ../shared/data)
#   DEVICE          cpu | cuda | auto (default auto)
#   TEACHER_BUDGET  the train job's time_budget_s (default the job's; 0 = none: every epoch runs)
#   DISTILL_BUDGET  the distill's time_budget_s, column and student each (default the job's; 0 = none)
#   THREADS         CPU threads of each step (default every core; set it when runs share a machine)
#   SEED            every training run's seed (default 0, the job's)
#   NEW_DATA        the new platform's records (default tests/data/gpu-h100/records.jsonl.gz, all 30 tasks;
#                   bench/lib/subset_records.py makes a share of it)
#   DISTILL_FLAGS   more bench_train flags for the distill (e.g. "--old-bank-ratio 2")
#   TEACHER         the teacher's folder (checkpoint, fisher), kept: the train job writes it when it
#                   holds no checkpoint, else it is reused and no train job runs
# Logs: LOGS_DIR/{teacher,distill,gate}.log; a failed step fails the script.
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: bench/gate_check.sh BUILD_DIR LOGS_DIR}
logs=${2:?usage: bench/gate_check.sh BUILD_DIR LOGS_DIR}
data=${DATA:-$(cd .. && pwd)/shared/data}
device=${DEVICE:-auto}
seed=${SEED:-0}
new_data=${NEW_DATA:-tests/data/gpu-h100/records.jsonl.gz}
threads=${THREADS:-$(nproc)}
budget() { [ -n "${1:-}" ] && echo "--time-budget $1"; }
mkdir -p "$logs"
work=$(mktemp -d /tmp/tcl-gate-check.XXXXXX)
trap 'rm -rf "$work"' EXIT
rm -f "$logs"/{teacher,distill,gate}.log  # never judge or show an earlier run's files
[ -f "${TEACHER:-/nonexistent}/checkpoint" ] && echo "teacher reused from $TEACHER" >"$logs/teacher.log"
teacher=${TEACHER:-$work/teacher}
common=(--device "$device" --seed "$seed" --threads "$threads")
rc=0
{ [ -f "$teacher/checkpoint" ] ||
  "$build/bench/bench_train" --data "$data/gpu-v100" "${common[@]}" $(budget "${TEACHER_BUDGET:-}") \
    --out "$teacher" >"$logs/teacher.log" 2>&1; } &&
  "$build/bench/bench_train" --distill --data "$new_data" --teacher "$teacher" --teacher-data "$data/gpu-v100" \
    "${common[@]}" $(budget "${DISTILL_BUDGET:-}") ${DISTILL_FLAGS:-} \
    --out "$work/student" >"$logs/distill.log" 2>&1 &&
  "$build/bench/bench_gate" "$data/gpu-v100/records.jsonl.gz" --teacher "$teacher/checkpoint" \
    --student "$work/student/checkpoint" --threads "$threads" >"$logs/gate.log" 2>&1 || rc=1
for f in teacher distill gate; do
  [ -f "$logs/$f.log" ] && { echo "== $f"; grep -v '^  ' "$logs/$f.log" | tail -n 12; }
done
exit $rc
