#!/usr/bin/env bash
# scripts/gpu/sampler_study.sh STEP... — issue 50's study on the GPU machine: which selection rule
# onboards a platform best, each platform in turn treated as new (leave one platform out). The base
# is a student trained jointly on the other four platforms (bench_onboarding --base-platforms, the
# first one primary); the new platform's tasks are split 70/30 by a salt; 10% of its pool is picked
# by each rule, the base fine-tuned on the picks and scored on the held-out 30%:
#   rdu      today's default (weights 0,1,1, two rounds)
#   random   a seeded sample per task, quotas by task size (stratified)
#   uniform  a seeded sample of the whole pool (unstratified)
#   fast     the base's predicted-fast programs spread by Diversity (what a tuner would measure)
# plus the whole pool (100%) and the base alone (zero-shot). bench_onboarding logs every run in
# runs.tsv and its --report prints top-1 sum / mean and the tuning proxy per split, and each rule
# − random with 95% bootstrap intervals over seeds.
#
# Validation and report: a rule is chosen on the VALIDATION salts (0,1,2) and reported on the
# REPORT salts (6,7,8); the report salts are not looked at until the choice is written down.
#
# Steps, in order:
#   stage    (on the dev machine) the records of the five platforms and Boost.Program_options into
#            .gpu/ (scripts/gpu/lineage_study.sh stage does it; carry .gpu)
#   build    bench_onboarding (TCL_TRAINER_ONLY against the machine's PyTorch LibTorch)
#   bound P FRACTION
#            P's pool cut to FRACTION of its records (bench/lib/subset_records.py, seed 1) in a data
#            folder of its own under /tmp, the other platforms beside it whole; later steps of the
#            call read it (x86-24c: 533k records would take the 10-minute call on embedding alone)
#   run P SEEDS SALTS
#            platform P as the new one, seeds SEEDS, split salts SALTS (comma lists): the base
#            first (one process), then every (seed, salt) a process of its own, side by side,
#            within what is left of BUDGET_S. runs.tsv keeps what finished: the same call resumes
#            while the machine stays warm (a cold machine starts over: /tmp)
#   report P SALTS
#            bench_onboarding --report over P's runs on those salts, into $OUT/report-P-SALTS.md
# Environment: BUDGET_S (default 550) seconds for all steps of one call; FLAGS more bench_onboarding
# flags; RULES one comma list of two-round rules each process runs alone (e.g. RULES=fast: a rule
# added after the others ran on those salts).
#
#   scripts/gpu/sampler_study.sh stage           # here; then on the GPU machine:
#   run(carry=[".gpu"], command="bash scripts/gpu/sampler_study.sh build run gpu-2080ti 1,2,3,4,5 0,1,2")
#   run(carry=[".gpu"], command="bash scripts/gpu/sampler_study.sh run gpu-2080ti 1,2,3,4,5 0,1,2 report gpu-2080ti 0,1,2")
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
OUT=${OUT:-/tmp/tcl-sampler-out}
BUILD=${BUILD:-/tmp/tcl-gpu-build}
WORK=/tmp/tcl-sampler-work  # kept between calls on one machine
LOGS=$WORK/logs
mkdir -p "$OUT" "$LOGS"
export PYTORCH_CUDA_ALLOC_CONF=${PYTORCH_CUDA_ALLOC_CONF:-expandable_segments:True}
DATA=${DATA:-$root/.gpu/shared/data}
PLATFORMS=(x86-24c x86-16c gpu-2080ti gpu-v100 gpu-h100)
deadline=$((SECONDS + ${BUDGET_S:-550}))
left() { echo $((deadline - SECONDS)); }

# The other platforms, x86-24c first when it is one of them (the largest: the primary of the joint base).
base_of() {
  local p out=()
  for p in "${PLATFORMS[@]}"; do [ "$p" != "$1" ] && out+=("$p"); done
  (IFS=,; echo "${out[*]}")
}

bound() {
  local p=$1 fraction=$2 dir=/tmp/tcl-sampler-data-$1-$2 q
  mkdir -p "$dir/$p"
  for q in "${PLATFORMS[@]}"; do [ "$q" != "$p" ] && ln -sfn "$DATA/$q" "$dir/$q"; done
  if [ ! -s "$dir/$p/records.jsonl.gz" ]; then  # written whole or not at all (a call cut mid-write)
    python3 bench/lib/subset_records.py "$DATA/$p/records.jsonl.gz" "$fraction" 1 "$dir/$p/part.jsonl.gz" &&
      mv "$dir/$p/part.jsonl.gz" "$dir/$p/records.jsonl.gz" || return 1
  fi
  DATA=$dir
  BOUND=$p BOUND_RUNS=$WORK/$p-$fraction  # its runs apart from the whole pool's (keys do not name the pool)
}

# Where platform $1's runs are logged: under WORK, apart for a bounded pool.
runs_of() { if [ "$1" = "${BOUND:-}" ]; then echo "$BOUND_RUNS"; else echo "$WORK/$1"; fi; }

build() { bash scripts/gpu/build.sh "$BUILD" "$root/.gpu/program_options" "$LOGS/build.log" bench_onboarding; }

# The flags every run of platform $1 shares (each process logs into its own folder $2: the runs
# are put together for the report).
common() {
  echo --data "$DATA" --out "$2" --platform "$1" --base-platforms "$(base_of "$1")" \
    --base-checkpoint "$WORK/base-$1.ckpt" --holdout 0.3 --fractions 0.1 --device cuda ${FLAGS:-}
}

one_run() {  # P SEED SALT THREADS STRATEGIES ROUNDS [more flags]
  local p=$1 seed=$2 salt=$3 threads=$4 strategies=$5 rounds=$6
  shift 6
  timeout "$(left)" "$BUILD/bench/bench_onboarding" $(common "$p" "$(runs_of "$p")/s$seed-t$salt") --seeds 1 --seed-base "$seed" --split-salt "$salt" \
    --threads "$threads" --strategies "$strategies" --rounds "$rounds" "$@" \
    >>"$LOGS/$p-s$seed-t$salt.log" 2>&1
}

run() {
  local p=$1 seeds=(${2//,/ }) salts=(${3//,/ }) seed salt n threads
  n=$((${#seeds[@]} * ${#salts[@]}))
  threads=$(($(nproc) / n > 0 ? $(nproc) / n : 1))
  # The base alone first: every other run reads its checkpoint.
  [ -s "$WORK/base-$p.ckpt" ] || one_run "$p" "${seeds[0]}" "${salts[0]}" "$(nproc)" random 1
  for salt in "${salts[@]}"; do
    for seed in "${seeds[@]}"; do
      if [ -n "${RULES:-}" ]; then
        one_run "$p" "$seed" "$salt" "$threads" "$RULES" 2 --no-full &
        continue
      fi
      { one_run "$p" "$seed" "$salt" "$threads" random,uniform 1 &&
        one_run "$p" "$seed" "$salt" "$threads" rdu,fast 2 --no-full; } &
    done
  done
  wait
  echo "== $p: $(cat "$(runs_of "$p")"/s*-t*/runs.tsv 2>/dev/null | wc -l) runs logged"
}

report() {
  local p=$1 salts=$2 r runs
  runs=$(runs_of "$p")
  mkdir -p "$runs/all"
  cat "$runs"/s*-t*/runs.tsv >"$runs/all/runs.tsv"
  for r in 1 2; do
    echo "### rounds $r (random and uniform always pick in one)"
    "$BUILD/bench/bench_onboarding" $(common "$p" "$runs/all") --strategies rdu,random,uniform,fast --rounds "$r" --seeds 5 \
      --report "$salts" 2>&1
  done | tee "$OUT/report-$p-${salts//,/-}.md" | tail -n 40
}

while [ $# -gt 0 ]; do
  step=$1
  shift
  case $step in
    stage) bash scripts/gpu/lineage_study.sh stage || exit 1 ;;
    bound) bound "$1" "$2" || exit 1; shift 2 ;;
    build) build || exit 1 ;;
    run) run "$1" "$2" "$3"; shift 3 ;;
    report) report "$1" "$2"; shift 2 ;;
    *) echo "unknown step $step" >&2; exit 2 ;;
  esac
done
tar -czf "$OUT/sampler-logs.tgz" -C "$WORK" --exclude=build.log --exclude='*.ckpt' . 2>/dev/null
