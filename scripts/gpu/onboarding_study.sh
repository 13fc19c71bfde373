#!/usr/bin/env bash
# scripts/gpu/onboarding_study.sh — issue 19 item 6 on a machine with an NVIDIA
# GPU: onboard gpu-v100 (117 tasks, 30% held out, split salt 5) from a lineage
# that knows x86-24c and gpu-2080ti (a base trained jointly on both,
# bench_onboarding --base-platforms), rdu 10% in one and two rounds against
# random 10%, the whole pool (100%) and zero-shot, SEEDS seeds. Twice: with
# the records' hardware facts (TVM's default CUDA params, the same as
# gpu-2080ti's) and with the V100's own (REAL: sm_70, 80 SMs). One process per
# seed and variant, side by side on the one GPU; then bench_onboarding --report
# over each variant's runs (mean ± sd, 95% bootstrap intervals over seeds).
#
#   scripts/gpu/onboarding_study.sh
# Environment: DATA, BUILD, LOGS, PO_ROOT as scripts/gpu/continual_study.sh;
#   SEEDS (default 5), BUDGET_S (default 540).
set -uo pipefail
cd "$(dirname "$0")/../.."

source scripts/gpu/env.sh  # DATA, BUILD, LOGS, PO_ROOT
SEEDS=${SEEDS:-5}
deadline=$((SECONDS + ${BUDGET_S:-540}))
WORK=/tmp/tcl-gpu-work/onboarding
mkdir -p "$LOGS" "$WORK"

bash scripts/gpu/build.sh "$BUILD" "$PO_ROOT" "$LOGS/build-onboarding.log" bench_onboarding || exit 1
bench="$BUILD/bench/bench_onboarding"
common=(--data "$DATA" --base-checkpoint "$WORK/base-x86-24c+gpu-2080ti.ckpt" --base-platforms x86-24c,gpu-2080ti
  --platform gpu-v100 --holdout 0.3 --split-salt 5 --fractions 0.1 --device cuda --threads 2)
real=(--target "cuda -keys=cuda,gpu -arch=sm_70 -model=v100 -max_num_threads=1024 -thread_warp_size=32"
  --hardware-params 80,16,64,49152,2147483647,1024,8,32)
run() {  # VARIANT SEED [flags...]
  local v=$1 s=$2
  shift 2
  local out="$WORK/$v-s$s"
  { timeout $((deadline - SECONDS)) "$bench" "${common[@]}" "$@" --out "$out" --seed-base "$s" --seeds 1 \
      --strategies rdu,random --rounds 1 &&
    timeout $((deadline - SECONDS)) "$bench" "${common[@]}" "$@" --out "$out" --seed-base "$s" --seeds 1 \
      --strategies rdu --rounds 2 --no-full; } >"$LOGS/onboarding-$v-s$s.log" 2>&1
}
# The first run alone: it trains the base that every other run reads.
run records 1
grep "^base" "$LOGS/onboarding-records-s1.log"
run real 1 "${real[@]}" &
for s in $(seq 2 "$SEEDS"); do
  run records "$s" &
  run real "$s" "${real[@]}" &
done
wait
for v in records real; do
  mkdir -p "$WORK/$v"
  cat "$WORK/$v"-s*/runs.tsv >"$WORK/$v/runs.tsv"
  cp "$WORK/$v/runs.tsv" "$LOGS/runs-$v.tsv"
  flags=("${common[@]}")
  [ "$v" = real ] && flags+=("${real[@]}")
  for r in 1 2; do
    echo "=== $v, rounds $r"
    "$bench" "${flags[@]}" --out "$WORK/$v" --strategies rdu,random --rounds "$r" --seeds "$SEEDS" --report 5 2>&1 |
      tee "$LOGS/report-$v-rounds$r.txt" | tail -n 30
  done
done
# The device tool brings back a few files only: every log in one archive under $OUT.
[ -n "${OUT:-}" ] && tar -czf "$OUT/logs.tgz" -C "$LOGS" .
