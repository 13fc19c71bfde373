#!/usr/bin/env bash
# bench/tune_warmup.sh [BUILD] — issue 47's warm-up lever, on this machine: every task's first round
# measures WARMUP programs (tclctl tune --warmup) instead of a whole round (--per-round), so the model's
# ranking decides more of the budget, and the search-time speedup's cap (budget ÷ warm-up) rises from
# 384 ÷ 256 = 1.5x to 384 ÷ 64 = 6x on MobileNet-V2's 32 tasks. The lineage is version 1 of one throwaway
# stack (x86-24c's train job, which never saw this machine: bench/lib/tune_stack.sh); nothing is uploaded.
#   cmake --build build --target tcld tclctl && bench/tune_warmup.sh build
# Runs, seed by seed (so that a drift of the machine falls on all alike):
#   OUT/warmup/NETWORK-MODEL-sS    MODELS (lineage random online) at --warmup WARMUP
#   OUT/whole/NETWORK-lineage-sS   the lineage with a whole first round (the default), to pair with
# Environment: OUT (/tmp/tune-warmup), DATA (../shared/data), BASE_RECORDS (40000), NETWORK
#   (mobilenet_v2), BUDGET (384), PER_ROUND (8), WARMUP (2), SEEDS ("1 2 3"), MODELS ("lineage random online").
#   Tables: OUT/summary.md (bench/tune_summary.py OUT/warmup, then OUT/whole --after OUT/warmup).
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(cd "${1:-build}" && pwd)
data=${DATA:-$(cd .. && pwd)/shared/data}
out=${OUT:-/tmp/tune-warmup}
network=${NETWORK:-mobilenet_v2}
budget=${BUDGET:-384}
per_round=${PER_ROUND:-8}
warmup=${WARMUP:-2}
source bench/lib/tune_stack.sh
tune_stack_start "$build" "$data" "$out"

for s in ${SEEDS:-1 2 3}; do
  for m in ${MODELS:-lineage random online}; do
    tune_run warmup "$network" "$m" "$s" "$budget" --per-round "$per_round" --warmup "$warmup" --upload 0 \
      --lineage-model 1
  done
  tune_run whole "$network" lineage "$s" "$budget" --per-round "$per_round" --upload 0 --lineage-model 1
done
stamp "done"
{
  echo "### $network, $budget measurements, $per_round a round, each task's first round $warmup programs"
  python3 bench/tune_summary.py "$out/warmup" || true
  echo "### the lineage: a whole first round ($per_round programs, before) against $warmup (after), paired by seed"
  python3 bench/tune_summary.py "$out/whole" --after "$out/warmup" || true
} | tee "$out/summary.md"
