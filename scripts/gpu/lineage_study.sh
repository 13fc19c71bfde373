#!/usr/bin/env bash
# scripts/gpu/lineage_study.sh STEP... — issue 48's study on the GPU machine: the per-platform
# adapter ("method": "adapter"), the distilled student and best-of (onboarding/best_of.h; tcld's default distill)
# along sequences where the new platform is far from the trunk and close to an earlier one, with
# forward transfer (zero-shot on each platform before it is learned). bench_continual, one process
# per (seed, split salt), side by side (dealt round-robin over the machine's GPUs). (scripts/gpu/continual_study.sh is issue 19's study
# of the student against fine-tuning and joint training; this one is modelled on tune_study.sh.)
# Steps, in order:
#   stage    (on the dev machine) into .gpu/ (ignored; carry it): Debian's Boost.Program_options
#            and XGBoost (scripts/gpu/stage_libs.sh), and the records of x86-24c, x86-16c, gpu-2080ti, gpu-v100 and gpu-h100
#            (tests/data/gpu-h100): about 40 MiB of the 64 the carry allows
#   build    bench_continual (TCL_TRAINER_ONLY against the machine's PyTorch LibTorch)
#   smoke    one short run of sequence A (1 epoch everywhere, 2 platforms) to see it go end to end
#   run SEQS SEEDS SALTS
#            sequences SEQS for seeds SEEDS and split salts SALTS (comma lists), every (seq, seed, salt) a
#            process of its own, all side by side, within what is left of BUDGET_S; methods
#            distill (the student), adapter, best-of (its choice: FLAGS' --best-of-choice, by default
#            onboarding::kDefaultChoice, adapter-on-student since 2026-12-04's last runs; before them the
#            adapter, and before 2026-12-04 the fine-tune). Everything trained is cached in $CACHE
#            (/tmp: kept while the machine stays warm), so a call cut by its budget resumes at
#            the next call with the same arguments; a cold machine starts over.
#   summary SEQ [SALTS]
#            scripts/gpu/lineage_summary.py over SEQ's logs (of SALTS, a comma list; all by default): tables with 95% t-intervals
# Sequences (item 3):
#   A  x86-24c → gpu-v100 → gpu-2080ti
#   B  x86-24c → gpu-2080ti → gpu-v100 → gpu-h100
#   C  gpu-v100 → gpu-2080ti → x86-16c   (a GPU-first lineage, then a CPU)
# Environment: BUDGET_S (default 550) seconds for all steps of one call; RUNS_THREADS (default the
# cores over the runs) torch threads per run; FLAGS more bench_continual flags; METHODS its --methods
# (default distill,adapter,best-of; best-of-trunk adds best-of with the old KD from the trunk).
#
#   scripts/gpu/lineage_study.sh stage            # here; then on the GPU machine, from the repository root:
#   run(carry=[".gpu"], command="bash scripts/gpu/lineage_study.sh build smoke")
#   run(carry=[".gpu"], command="bash scripts/gpu/lineage_study.sh run A 1,2,3,4,5 0")
#   run(carry=[".gpu"], command="bash scripts/gpu/lineage_study.sh run A 1,2,3,4,5 1 summary A")
# The device may be released between calls (its /tmp cache with it): plan each call to finish by
# itself. Ten B runs do not fit one call; run B one salt a call (docs/continual.md, "B's steps 2 and 3").
# FLAGS="--best-of-choice adapter --ensembles": best-of with its adapter choice, and the ensembles of
# bench_continual --ensembles printed beside it (docs/continual.md, "What the ensembles measured").
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
OUT=${OUT:-/tmp/tcl-lineage-out}
BUILD=${BUILD:-/tmp/tcl-gpu-build}
CACHE=${CACHE:-/tmp/tcl-lineage-cache}  # kept between calls on one machine
LOGS=${LOGS:-/tmp/tcl-lineage-logs}              # likewise; copied to $OUT at the end of every call
mkdir -p "$OUT" "$LOGS" "$CACHE"
export PYTORCH_CUDA_ALLOC_CONF=${PYTORCH_CUDA_ALLOC_CONF:-expandable_segments:True}
DATA=$root/.gpu/shared/data
export LD_LIBRARY_PATH="$root/.gpu/xgboost/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
deadline=$((SECONDS + ${BUDGET_S:-550}))
left() { echo $((deadline - SECONDS)); }

sequence() {
  case $1 in
    A) echo x86-24c,gpu-v100,gpu-2080ti ;;
    B) echo x86-24c,gpu-2080ti,gpu-v100,gpu-h100 ;;
    C) echo gpu-v100,gpu-2080ti,x86-16c ;;
    *) echo "unknown sequence $1 (A, B, C)" >&2; return 1 ;;
  esac
}

stage() {
  local p
  bash scripts/gpu/stage_libs.sh .gpu
  for p in x86-24c x86-16c gpu-2080ti gpu-v100; do
    mkdir -p ".gpu/shared/data/$p" && cp "../shared/data/$p/records.jsonl.gz" ".gpu/shared/data/$p/"
  done
  mkdir -p .gpu/shared/data/gpu-h100 && cp tests/data/gpu-h100/records.jsonl.gz .gpu/shared/data/gpu-h100/
  du -sh .gpu
  [ "$(du -sm .gpu | cut -f1)" -lt 64 ] || echo "warning: .gpu holds 64 MiB or more: the carry refuses it" >&2
}

build() {
  bash scripts/gpu/build.sh "$BUILD" "$root/.gpu/program_options" "$LOGS/build.log" bench_continual
}

# One bench_continual run of sequence $1, seed $2, split salt $3, threads $4, on GPU $5, in the background.
one_run() {
  local seq=$1 seed=$2 salt=$3 threads=$4 gpu=$5 platforms
  platforms=$(sequence "$seq") || return 1
  CUDA_VISIBLE_DEVICES=$gpu timeout "$(left)" "$BUILD/bench/bench_continual" --data "$DATA" --out "$LOGS/$seq-s$seed-t$salt" --cache "$CACHE" \
    --platforms "$platforms" --methods "${METHODS:-distill,adapter,best-of}" --seed "$seed" --split-salt "$salt" \
    --device cuda --threads "$threads" ${FLAGS:-} >"$LOGS/$seq-s$seed-t$salt.log" 2>&1 &
}

smoke() {
  timeout "$(left)" "$BUILD/bench/bench_continual" --data "$DATA" --out "$LOGS/smoke" --cache "$CACHE/smoke" \
    --platforms gpu-v100,gpu-2080ti --methods "${METHODS:-distill,adapter,best-of}" --epochs 1 --column-epochs 1 \
    --base-epochs 1 --device cuda --threads 4 ${FLAGS:-} >"$LOGS/smoke.log" 2>&1
  echo "== smoke: rc $?"; grep -E "best-of choice|zero-shot|candidate|^  \((e|f)\)" "$LOGS/smoke.log" | tail -n 16
}

run() {
  local seqs=(${1//,/ }) seeds=(${2//,/ }) salts=(${3//,/ }) seq seed salt n threads gpus i=0
  n=$((${#seqs[@]} * ${#seeds[@]} * ${#salts[@]}))
  threads=${RUNS_THREADS:-$(($(nproc) / n > 0 ? $(nproc) / n : 1))}
  gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
  [ "$gpus" -ge 1 ] || gpus=1
  for seq in "${seqs[@]}"; do
    for salt in "${salts[@]}"; do
      for seed in "${seeds[@]}"; do
        one_run "$seq" "$seed" "$salt" "$threads" $((i % gpus))
        i=$((i + 1))
      done
    done
  done
  wait
  for seq in "${seqs[@]}"; do
    for salt in "${salts[@]}"; do
      for seed in "${seeds[@]}"; do
        echo "== $seq seed $seed salt $salt: $(grep -c 'best-of choice' "$LOGS/$seq-s$seed-t$salt.log") best-of steps" \
          "of $(($(sequence "$seq" | tr ',' '\n' | wc -l) - 1)); $(tail -n 1 "$LOGS/$seq-s$seed-t$salt.log")"
      done
    done
  done
}

summary() {
  local logs=() t
  if [ -z "${2:-}" ]; then logs=("$LOGS/$1"-s*-t*.log); fi
  for t in ${2//,/ }; do logs+=("$LOGS/$1"-s*-t"$t".log); done
  python3 scripts/gpu/lineage_summary.py "${logs[@]}" | tee "$OUT/summary-$1${2:+-salt${2//,/}}.md"
}

# The logs and each run's RESULTS.md in one archive (the device tool brings back few files), written after
# every step and on TERM (renamed into place whole), so that a call stopped at the device's limit still brings
# back what its runs had written.
pack() {
  tar -czf "$OUT/lineage-logs.tgz.tmp" -C "$LOGS" --exclude=build.log . 2>/dev/null &&
    mv "$OUT/lineage-logs.tgz.tmp" "$OUT/lineage-logs.tgz"
}
trap 'pack; exit 143' TERM

while [ $# -gt 0 ]; do
  step=$1
  shift
  case $step in
    stage | build) "$step" || exit 1 ;;
    smoke) smoke ;;
    run) run "$1" "$2" "$3"; shift 3 ;;
    summary)
      if [[ ${2:-} =~ ^[0-9,]+$ ]]; then summary "$1" "$2"; shift 2; else summary "$1"; shift; fi ;;
    *) echo "unknown step $step" >&2; exit 2 ;;
  esac
  pack
done
