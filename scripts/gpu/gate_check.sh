#!/usr/bin/env bash
# scripts/gpu/gate_check.sh — issue 19 item 4, the product path's question (session 23): through tcld on
# the CPU, no default distill from a gpu-v100 lineage into the H100 pool was promoted (the gate saw
# gpu-v100's measured tasks lose 0.015-0.026). Is that the CPU budget, which stops the student early?
# Here nothing stops it: on CUDA the same default jobs run their full epochs. bench_train's default
# train job on gpu-v100, its default distill into tests/data/gpu-h100, then bench_gate (the promotion
# gate's paired comparison) of student against teacher on gpu-v100's records.
#   scripts/gpu/gate_check.sh        (after scripts/gpu/stage.sh; logs in LOGS, copied to OUT when set)
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/gpu/env.sh  # DATA, BUILD, LOGS, PO_ROOT
mkdir -p "$LOGS"
bash scripts/gpu/build.sh "$BUILD" "$PO_ROOT" "$LOGS/build.log" bench_train bench_gate || exit 1
work=/tmp/tcl-gate-check
rm -rf "$work" "$LOGS"/{teacher,distill,gate}.log  # never judge or show an earlier run's files
rc=0
"$BUILD/bench/bench_train" --data "$DATA/gpu-v100" --device cuda --out "$work/teacher" >"$LOGS/teacher.log" 2>&1 &&
  "$BUILD/bench/bench_train" --distill --data tests/data/gpu-h100/records.jsonl.gz --teacher "$work/teacher" \
    --teacher-data "$DATA/gpu-v100" --device cuda --out "$work/student" >"$LOGS/distill.log" 2>&1 &&
  "$BUILD/bench/bench_gate" "$DATA/gpu-v100/records.jsonl.gz" --teacher "$work/teacher/checkpoint" \
    --student "$work/student/checkpoint" --threads "$(nproc)" >"$LOGS/gate.log" 2>&1 || rc=1
for f in teacher distill gate; do [ -f "$LOGS/$f.log" ] && { echo "== $f"; tail -n 12 "$LOGS/$f.log"; }; done
[ -n "${OUT:-}" ] && cp "$LOGS"/*.log "$OUT"/
exit $rc
