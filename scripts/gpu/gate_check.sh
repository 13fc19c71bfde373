#!/usr/bin/env bash
# scripts/gpu/gate_check.sh [SEED ...] — bench/gate_check.sh on CUDA (issue 19 item 4): the default train
# job on gpu-v100, the default distill into tests/data/gpu-h100, the promotion gate's comparison on
# gpu-v100, once per seed (default 0, the job's). On CUDA the time budget does not bind: every planned
# epoch runs. PARALLEL (default 3) seeds run side by side on the one GPU; extra environment (e.g.
# DISTILL_FLAGS) goes through to bench/gate_check.sh. Two of these may run at once on one BUILD (the
# build waits for the other's) with their own LOGS.
#   scripts/gpu/gate_check.sh 1 2 3   (after scripts/gpu/stage.sh; logs in LOGS/seed-N, archived to OUT)
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/gpu/env.sh  # DATA, BUILD, LOGS, PO_ROOT
parallel=${PARALLEL:-3}
seeds=("$@")
[ ${#seeds[@]} -eq 0 ] && seeds=(0)
[ "$parallel" -ge 1 ] 2>/dev/null || { echo "PARALLEL must be a number >= 1" >&2; exit 2; }
# Every seed trains its own teacher: a shared TEACHER folder would be written by several at once.
[ -n "${TEACHER:-}" ] && [ ${#seeds[@]} -gt 1 ] && { echo "TEACHER takes one seed" >&2; exit 2; }
mkdir -p "$LOGS"
bash scripts/gpu/build.sh "$BUILD" "$PO_ROOT" "$LOGS/build.log" bench_train bench_gate || exit 1
# Each run's CPU threads: the cores shared out (the evaluations run on the CPU; 16 threads each, four
# side by side, took 136 s where one alone takes 5).
threads=$(($(nproc) / parallel))
threads=${THREADS:-$((threads > 0 ? threads : 1))}
run_one() {
  DATA=$DATA DEVICE=cuda SEED=$1 THREADS=$threads bash bench/gate_check.sh "$BUILD" "$LOGS/seed-$1" \
    >"$LOGS/seed-$1.out" 2>&1
}
rc=0
for ((i = 0; i < ${#seeds[@]}; i += parallel)); do
  pids=()
  for s in "${seeds[@]:i:parallel}"; do run_one "$s" & pids+=($!); done
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
done
for s in "${seeds[@]}"; do
  echo "== seed $s"
  grep -E "^all:|^evaluate|^(train|column|distill): device" "$LOGS/seed-$s/"*.log
done
# One archive: the machine returns few files.
[ -n "${OUT:-}" ] && tar -C "$LOGS" -czf "$OUT/gate_check_logs.tgz" .
exit $rc
