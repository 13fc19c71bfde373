#!/usr/bin/env bash
# bench/tune_population.sh [BUILD] — issue 47's lever for the search share of small rounds: the same
# runs with Ansor's fixed population (2048) and with one scaled to the round (bench_tune
# --population-per-pick PER_PICK: a round of 2 searches 256, a round of 8 1024 at 128), seed by seed,
# alternating, on this CPU, from a lineage checkpoint (bench_train's default train job). Nothing is
# uploaded; no tcld.
#   build/bench/bench_train --data ../shared/data/x86-24c --out /tmp/lin-x86
#   CHECKPOINT=/tmp/lin-x86/checkpoint bench/tune_population.sh build
# Environment: CHECKPOINT (required), OUT (/tmp/tune-population), NETWORK (mobilenet_v2), MODEL
#   (lineage), BUDGET (384), PER_ROUND (8), WARMUP (2), SEEDS ("1 2 3"), PER_PICK (128).
# Tables: OUT/summary.md — each setting's final latency and search share (bench/tune_summary.py), and
# the scaled runs against the fixed ones, paired by seed.
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(cd "${1:-build}" && pwd)
out=${OUT:-/tmp/tune-population}
per_pick=${PER_PICK:-128}
: "${CHECKPOINT:?set CHECKPOINT to a lineage checkpoint (bench_train --out DIR writes DIR/checkpoint)}"
mkdir -p "$out"
for s in ${SEEDS:-1 2 3}; do
  for p in 0 "$per_pick"; do
    echo "== $(date +%T) seed $s, population per pick $p" >&2
    "$build/bench/bench_tune" --target cpu --network "${NETWORK:-mobilenet_v2}" --models "${MODEL:-lineage}" \
      --seeds "$s" --budget "${BUDGET:-384}" --per-round "${PER_ROUND:-8}" --warmup "${WARMUP:-2}" \
      --population-per-pick "$p" --checkpoint "$CHECKPOINT" --out "$out/per-pick-$p" \
      2>"$out/per-pick-$p-s$s.log" | tail -n 1
  done
done
{
  for p in 0 "$per_pick"; do
    echo "# population per pick $p (0: a fixed population of 2048)"
    python3 bench/tune_summary.py "$out/per-pick-$p"
  done
  echo "# per pick $per_pick (after) against a fixed population (before), paired by seed"
  python3 bench/tune_summary.py "$out/per-pick-0" --after "$out/per-pick-$per_pick"
} | tee "$out/summary.md"
