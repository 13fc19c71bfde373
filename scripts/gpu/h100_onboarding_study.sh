#!/usr/bin/env bash
# scripts/gpu/h100_onboarding_study.sh — issue 21 item 2 on a machine with an NVIDIA GPU: onboard
# the H100 that tcl-measure measured (tests/data/gpu-h100: ResNet-50 and BERT-base, 30 tasks,
# 200 schedules each) from a lineage that knows x86-24c, gpu-2080ti and gpu-v100 (a base trained
# jointly on all three, bench_onboarding --base-platforms). rdu at 10% in two rounds against random
# at 10%, the whole pool (100%) and zero-shot, on SPLITS task splits (30% of the tasks held out per
# split) × SEEDS seeds; then bench_onboarding --report over every split (mean ± sd, 95% bootstrap
# intervals over seeds). The fine-tunes choose their schedule as the daemon's do (--ft-auto-schedule).
#
#   scripts/gpu/h100_onboarding_study.sh
# Environment: DATA, BUILD, LOGS, PO_ROOT as scripts/gpu/continual_study.sh;
#   SEEDS (default 3), SPLITS (split salts, default "1 2 3 4"), REPORT_SPLITS (the report's, default
#   SPLITS: runs of earlier calls on the same machine count too), BUDGET_S (default 540), BENCH_FLAGS
#   (more bench_onboarding flags for every run, e.g. --pick-percentiles).
set -uo pipefail
cd "$(dirname "$0")/../.."

source scripts/gpu/env.sh  # DATA, BUILD, LOGS, PO_ROOT
SEEDS=${SEEDS:-3}
SPLITS=${SPLITS:-1 2 3 4}
deadline=$((SECONDS + ${BUDGET_S:-540}))
WORK=/tmp/tcl-gpu-work/h100
mkdir -p "$LOGS" "$WORK/data"
# The old platforms from DATA, the H100 from this repository.
for p in x86-24c gpu-2080ti gpu-v100; do ln -sfn "$DATA/$p" "$WORK/data/$p"; done
ln -sfn "$(pwd)/tests/data/gpu-h100" "$WORK/data/gpu-h100"

bash scripts/gpu/build.sh "$BUILD" "$PO_ROOT" "$LOGS/build-h100.log" bench_onboarding || exit 1
bench="$BUILD/bench/bench_onboarding"
common=(--data "$WORK/data" --base-checkpoint "$WORK/base-x86-24c+gpu-2080ti+gpu-v100.ckpt"
  --base-platforms x86-24c,gpu-2080ti,gpu-v100 --base-max-records 1000000 --platform gpu-h100 --holdout 0.3
  --fractions 0.1 --ft-auto-schedule --device cuda --threads 2)
# shellcheck disable=SC2086  # BENCH_FLAGS is a list of flags
run() {  # SALT SEED
  local out="$WORK/runs-$1-s$2"
  timeout $((deadline - SECONDS)) "$bench" "${common[@]}" --split-salt "$1" --out "$out" --seed-base "$2" --seeds 1 \
    --strategies rdu,random --rounds 2 ${BENCH_FLAGS:-} >"$LOGS/h100-salt$1-s$2.log" 2>&1
}
# The first run alone: it trains the base that every other run reads.
t0=$SECONDS
first=${SPLITS%% *}
[[ -f "$WORK/runs-$first-s1/runs.tsv" ]] || run "$first" 1
echo "== base and the first run: $((SECONDS - t0)) s"
grep "^base" "$LOGS/h100-salt$first-s1.log"
for salt in $SPLITS; do
  for s in $(seq 1 "$SEEDS"); do
    [[ -f "$WORK/runs-$salt-s$s/runs.tsv" && "$salt" == "$first" && "$s" == 1 ]] && continue
    run "$salt" "$s" &
  done
  wait  # one split at a time: SEEDS processes side by side on the one GPU
done
mkdir -p "$WORK/all"
cat "$WORK"/runs-*/runs.tsv >"$WORK/all/runs.tsv"
cp "$WORK/all/runs.tsv" "$LOGS/runs-h100.tsv"
salts=$(echo "${REPORT_SPLITS:-$SPLITS}" | tr ' ' ',')
"$bench" "${common[@]}" --out "$WORK/all" --strategies rdu,random --rounds 2 --seeds "$SEEDS" --report "$salts" 2>&1 |
  tee "$LOGS/report-h100.txt" | tail -n 40
[ -n "${OUT:-}" ] && tar -czf "$OUT/logs.tgz" -C "$LOGS" .
