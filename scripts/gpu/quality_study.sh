#!/usr/bin/env bash
# scripts/gpu/quality_study.sh — issue 19 item 5's study on a machine with an
# NVIDIA GPU: the student (mamba) on x86-24c under DESIGN §10's protocol
# (bench_quality: 25% of whole tasks held out, salt = seed, >= 3 seeds),
# default budget against all programs and more epochs, a larger model, and
# the LambdaRank knobs bench_quality has. One log per setting; the last lines
# of each are its table (mean ± sd over the seeds: top-1 / top-5 sum and mean,
# pairwise, the tuning proxy and the share of tasks better than random).
#
#   scripts/gpu/quality_study.sh [SETTING...]     (default: all, in the order below)
# Settings (flags added to the common ones):
#   default   bench_quality's budget: 50,000 records, 4 epochs, 8 groups of 64 a step
#   all4      all programs (--max-records 10000000, ~410k training programs), 4 epochs
#   all12     all programs, 12 epochs (~210 s a seed on an H100)
#   big       all programs, 8 epochs, 32 groups a step (4x the programs a step, same lr)
#   wide      big, d_model 128 (default 64)
#   deep      big, 4 layers (default 2)
#   ndcg8     big, LambdaRank NDCG@8 (default: the whole group)
#   sigma2    big, LambdaRank sigma 2 (default 1)
#   group256  big, LambdaRank groups of 256 programs, 8 a step (the same programs a step)
#   gain8     all4, LambdaRank gain label^8 (the pairs near a task's best weigh most)
#   listwise  all4, the listwise softmax loss towards softmax(20 · label)
#   ema       all4, the weights' moving average (decay 0.999 a step) judged and returned
#   listema   listwise and ema together
#   ens3      all4, an ensemble of 3 students per seed (bench_quality --ensemble 3: rows mamba, mamba x2, x3)
#   workload  all4, the student with and without the workload token (models mamba,mamba:workload, paired)
# Environment:
#   DATA      folder with the platforms' records.jsonl.gz (default ../shared/data)
#   PLATFORM  the platform studied (default x86-24c; another one's logs are named quality_PLATFORM_SETTING)
#   BUILD     build folder (default /tmp/tcl-gpu-build; kept between runs on one machine)
#   LOGS      logs (default /tmp/tcl-gpu-logs; all of them in $OUT/logs.tgz at the end when OUT is set)
#   SEEDS / SEED_BASE   seeds per setting (default 3) and the first (default 1)
#   BUDGET_S  seconds for all settings together (default 560); a setting gets what is left
#   VALIDATION  > 0: choose, do not report (bench_quality --validation: each seed's held-out tasks
#             dropped, this share of the rest scored); logs are named quality_SETTING_validation.log
#   PARALLEL  1: the settings side by side on the one GPU (each still runs its seeds in turn)
#   SPLIT_SEEDS 1: with PARALLEL, every seed of a setting a process of its own too (logs ..._sSEED.log)
#   PO_ROOT   Debian's Boost.Program_options (default ../program_options, from scripts/gpu/stage.sh)
#
# On this workplace's device machine (its `run` tool copies the repository it
# was started from, not a worktree): scripts/gpu/stage.sh ../main/.gpu, then
#   run(carry=[".gpu"], command="cd .gpu/src && bash scripts/gpu/quality_study.sh default all4")
#
# The runs of 2026-11-27 (one H100; the table is in the branch tuning-proxy's report):
#   quality_study.sh default all12 (all12: seed 1 only, in the time left) ; quality_study.sh big all4 wide ndcg8
#   (wide: seeds 1-2) ; SEEDS=1 SEED_BASE=3 quality_study.sh wide ; quality_study.sh ndcg8 sigma2 group256
#   (group256: seeds 1-2) ; SEEDS=1 SEED_BASE=3 quality_study.sh group256
#   SEED_BASE=4 quality_study.sh default wide    (a second look at the best setting on other splits)
set -uo pipefail
cd "$(dirname "$0")/../.."

source scripts/gpu/env.sh  # DATA, BUILD, LOGS, PO_ROOT
deadline=$((SECONDS + ${BUDGET_S:-560}))
mkdir -p "$LOGS"
settings=("$@")
[ ${#settings[@]} -eq 0 ] && settings=(default all4 big wide deep ndcg8 sigma2 group256)

bash scripts/gpu/build.sh "$BUILD" "${PO_ROOT:-$(cd .. && pwd)/program_options}" "$LOGS/build.log" bench_quality || exit 1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader

all="--max-records 10000000"
big="$all --epochs 8 --groups-per-batch 32"
for s in "${settings[@]}"; do
  models=mamba
  case $s in
    default) flags="" ;;
    all4) flags="$all --epochs 4" ;;
    all12) flags="$all --epochs 12" ;;
    big) flags="$big" ;;
    wide) flags="$big --d-model 128" ;;
    deep) flags="$big --n-layers 4" ;;
    ndcg8) flags="$big --ndcg-at 8" ;;
    sigma2) flags="$big --sigma 2" ;;
    group256) flags="$big --group-size 256 --groups-per-batch 8" ;;
    gain8) flags="$all --epochs 4 --gain-power 8" ;;
    listwise) flags="$all --epochs 4 --loss listwise" ;;
    ema) flags="$all --epochs 4 --ema 0.999" ;;
    listema) flags="$all --epochs 4 --loss listwise --ema 0.999" ;;
    ens3) flags="$all --epochs 4 --ensemble 3" ;;
    workload) flags="$all --epochs 4" models=mamba,mamba:workload ;;
    *) echo "unknown setting $s" >&2; exit 2 ;;
  esac
  left=$((deadline - SECONDS))
  [ "$left" -le 10 ] && { echo "== $s: skipped, no time left"; continue; }
  platform=${PLATFORM:-x86-24c}
  name=$s
  [ "$platform" != x86-24c ] && name=${platform}_$s
  log="$LOGS/quality_$name.log"
  if [ "${VALIDATION:-0}" != 0 ]; then
    flags="$flags --validation $VALIDATION"
    log="$LOGS/quality_${name}_validation.log"
  fi
  echo "== $name ($left s left): bench_quality --data DATA/$platform --models $models --eval-fraction 0.25 $flags"
  one_setting() {  # SEEDS_OF_RUN FIRST_SEED LOG
    local t0=$SECONDS rc
    # shellcheck disable=SC2086  # flags are words
    timeout "$left" "$BUILD/bench/bench_quality" --data "$DATA/$platform" --models "$models" --eval-fraction 0.25 \
      --seeds "$1" --seed-base "$2" --device cuda $flags >"$3" 2>&1
    rc=$?
    echo "== $(basename "$3"): rc $rc in $((SECONDS - t0)) s"
    grep -E '^seed [0-9]+ mamba|^\| (mamba|random floor)' "$3"
  }
  seeds=${SEEDS:-3} base=${SEED_BASE:-1}
  if [ "${PARALLEL:-0}" = 1 ] && [ "${SPLIT_SEEDS:-0}" = 1 ]; then
    for ((k = 0; k < seeds; k++)); do one_setting 1 $((base + k)) "${log%.log}_s$((base + k)).log" & done
  elif [ "${PARALLEL:-0}" = 1 ]; then
    one_setting "$seeds" "$base" "$log" &
  else
    one_setting "$seeds" "$base" "$log"
  fi
done
wait
# The device tool brings back a few files only: every log in one archive under $OUT.
[ -n "${OUT:-}" ] && tar -czf "$OUT/logs.tgz" -C "$LOGS" .
