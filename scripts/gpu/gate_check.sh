#!/usr/bin/env bash
# scripts/gpu/gate_check.sh [SEED ...] — bench/gate_check.sh on CUDA (issue 19 item 4): the default train
# job on gpu-v100, the default distill into tests/data/gpu-h100, the promotion gate's comparison on
# gpu-v100, once per seed (default 0, the job's). On CUDA the time budget does not bind: every planned
# epoch runs. PARALLEL (default 3) seeds run side by side on the one GPU; extra environment (e.g.
# DISTILL_BUDGET) goes through to bench/gate_check.sh.
#   scripts/gpu/gate_check.sh 1 2 3   (after scripts/gpu/stage.sh; logs in LOGS/seed-N, copied to OUT)
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/gpu/env.sh  # DATA, BUILD, LOGS, PO_ROOT
mkdir -p "$LOGS"
bash scripts/gpu/build.sh "$BUILD" "$PO_ROOT" "$LOGS/build.log" bench_train bench_gate || exit 1
seeds=("$@")
[ ${#seeds[@]} -eq 0 ] && seeds=(0)
rc=0
# Each run's CPU threads: the cores shared out (the evaluations run on the CPU; 16 threads each, four side by
# side, took 136 s where one alone takes 5).
threads=$(($(nproc) / ${PARALLEL:-3}))
run_one() { DATA=$DATA DEVICE=cuda SEED=$1 THREADS=${THREADS:-$((threads > 0 ? threads : 1))} bash bench/gate_check.sh "$BUILD" "$LOGS/seed-$1" >"$LOGS/seed-$1.out" 2>&1; }
for ((i = 0; i < ${#seeds[@]}; i += ${PARALLEL:-3})); do
  pids=()
  for s in "${seeds[@]:i:${PARALLEL:-3}}"; do run_one "$s" & pids+=($!); done
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
done
for s in "${seeds[@]}"; do echo "== seed $s"; grep -E "^all:|^evaluate|^(train|column|distill): device" "$LOGS/seed-$s/"*.log; done
# One archive: the machine returns few files.
[ -n "${OUT:-}" ] && tar -C "$LOGS" -czf "$OUT/gate_check_logs.tgz" .
exit $rc
