#!/usr/bin/env bash
# scripts/gpu/continual_salts.sh — scripts/gpu/continual_study.sh at several
# split salts side by side on the one GPU (each salt holds out another 30% of
# every platform's tasks: bench_continual --split-salt), then
# scripts/gpu/continual_steps.py per salt, so that a result can be told from
# the draw of tasks it was scored on (docs/benchmarks.md, session 17).
#
#   scripts/gpu/continual_salts.sh [SEED...]      (default: 1 2 3)
# Environment (the rest as continual_study.sh: METHODS, BANK, EXTRA, FLAGS,
# BUDGET_S, DATA, BUILD, PO_ROOT):
#   SALTS       the split salts (default "1 3")
#   LOGS        each salt's logs in LOGS/salt-S (default /tmp/tcl-gpu-logs)
#   CACHE_ROOT  each salt's cache in CACHE_ROOT/salt-S (default /tmp/tcl-gpu-work/salts); a later call on
#               the same machine (other seeds, or EXTRA's second lineage) reuses what it shares
#   THREADS     threads per run (default 2, as every study since session 16: the count is in the base's
#               cache key and changes the results, so keep it equal across studies you compare)
#   BETWEEN     "FIRST|SECOND": also continual_steps.py --between those two lineages' names
#   OUT         set: every log under LOGS in $OUT/logs.tgz at the end (an earlier call's on the same machine too)
#   GPUS        the salts are dealt across this many GPUs: the i-th salt of SALTS (from 0) on the
#               (i mod GPUS)-th of the GPUs (the caller's CUDA_VISIBLE_DEVICES list when set, else
#               0..GPUS-1); default: all of them (those nvidia-smi lists). A machine of two GPUs runs two
#               salts at full speed
#
# On this workplace's device machine, after scripts/gpu/stage.sh ../main/.gpu:
#   run(carry=[".gpu"], command="cd .gpu/src && METHODS=distill,ft BANK=20000 \
#       bash scripts/gpu/continual_salts.sh 1 2 3")
set -uo pipefail
cd "$(dirname "$0")/../.."

source scripts/gpu/env.sh  # DATA, BUILD, LOGS, PO_ROOT
seeds=("$@")
[ ${#seeds[@]} -eq 0 ] && seeds=(1 2 3)
read -r -a salts <<<"${SALTS:-1 3}"
root=${CACHE_ROOT:-/tmp/tcl-gpu-work/salts}
archive=${OUT:-}
mkdir -p "$LOGS"

# One build first, so that the studies below find it done (build.sh locks the folder besides).
bash scripts/gpu/build.sh "$BUILD" "$PO_ROOT" "$LOGS/build.log" bench_continual trainer_cuda_test || exit 1
if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then
  IFS=, read -r -a visible <<<"$CUDA_VISIBLE_DEVICES"
else
  n=${GPUS:-$(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null | wc -l)}
  [ "$n" -ge 1 ] 2>/dev/null || n=1
  mapfile -t visible < <(seq 0 $((n - 1)))
fi
gpus=${GPUS:-${#visible[@]}}
{ [ "$gpus" -ge 1 ] && [ "$gpus" -le ${#visible[@]} ]; } 2>/dev/null || gpus=${#visible[@]}
i=0
for s in "${salts[@]}"; do
  gpu=${visible[$((i % gpus))]}
  CUDA_VISIBLE_DEVICES=$gpu LOGS="$LOGS/salt-$s" CACHE="$root/salt-$s" FLAGS="${FLAGS:-} --split-salt $s" \
    THREADS="${THREADS:-2}" CUDA_TEST=0 OUT='' bash scripts/gpu/continual_study.sh "${seeds[@]}" >"$LOGS/salt-$s.out" 2>&1 &
  i=$((i + 1))
done
wait

for s in "${salts[@]}"; do
  logs=()
  for seed in "${seeds[@]}"; do logs+=("$LOGS/salt-$s/continual-s$seed.log"); done
  echo "######## salt $s, seeds ${seeds[*]}"
  python3 scripts/gpu/continual_steps.py "${logs[@]}"
  if [ -n "${BETWEEN:-}" ]; then
    python3 scripts/gpu/continual_steps.py "${logs[@]}" --between "${BETWEEN%%|*}" "${BETWEEN#*|}"
  fi
done
[ -n "$archive" ] && tar -czf "$archive/logs.tgz" -C "$LOGS" .
exit 0
