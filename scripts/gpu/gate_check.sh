#!/usr/bin/env bash
# scripts/gpu/gate_check.sh — bench/gate_check.sh on CUDA (issue 19 item 4): the default train job on
# gpu-v100, the default distill into tests/data/gpu-h100, the promotion gate's comparison on gpu-v100.
# On CUDA the time budget does not bind: every planned epoch runs. Session 23 ran it to compare with the
# CPU product path, where the budget stops training early.
#   scripts/gpu/gate_check.sh        (after scripts/gpu/stage.sh; logs in LOGS, copied to OUT when set)
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/gpu/env.sh  # DATA, BUILD, LOGS, PO_ROOT
mkdir -p "$LOGS"
bash scripts/gpu/build.sh "$BUILD" "$PO_ROOT" "$LOGS/build.log" bench_train bench_gate || exit 1
DATA=$DATA DEVICE=cuda bash bench/gate_check.sh "$BUILD" "$LOGS"
rc=$?
[ -n "${OUT:-}" ] && cp "$LOGS"/*.log "$OUT"/
exit $rc
