#!/usr/bin/env bash
# scripts/gpu/tune_study.sh STEP... — issue 47's tuning study on the GPU machine (bench_tune; the
# figures and their reading: docs/tuning.md). Steps, in order:
#   stage    (on the dev machine) what the GPU machine lacks, into .gpu/ (ignored; carry it):
#            Debian's XGBoost and Boost.Program_options, and x86-24c's records
#   restore  the runs of earlier sessions, carried in .gpu/tune-runs.tar.gz (a collect step's
#            archive), into the runs folder when it is empty: their runs resume, finished ones stay
#   build    bench_train and bench_tune (TCL_TRAINER_ONLY, tcl-measure's CUDA backend)
#   lineage  the lineage's models, trained as tcld's default train job (bench_train, CUDA):
#            gpu-h100 (tests/data/gpu-h100: the H100 this project measured, ResNet-50 and BERT-base
#            tasks) and x86-24c; into $OUT/lineage-*/checkpoint
#   smoke    every model for 2 rounds on 2 ResNet-50 tasks on GPU 0
#   anchors NETWORK
#            the GPU's physical anchors of the runs so far (scripts/gpu/tune_anchors.py: PyTorch's
#            cuBLAS/cuDNN, FP32 without TF32, and the roofline)
#   gpu NETWORK BUDGET SEEDS
#            the four models on NETWORK, BUDGET measurements each, seeds SEEDS (comma list), one run
#            at a time on GPU 0; the lineage is the gpu-h100 model. Runs live in /tmp/tcl-tune-runs
#            (resumable while the machine stays warm) and are copied to $OUT/tune at the end.
#   cpu NETWORK BUDGET SEEDS
#            the same on this machine's CPU, in the background on the upper half of the cores (the gpu
#            step keeps to the lower half), the lineage being the x86-24c model; the call waits for it
# BUDGET_S (default 570): seconds for all steps of one call. MODELS (default "lineage lineage+online
# online random"): the gpu and cpu steps' models, in this order for each seed. WARMUP: each task's first
# round measures WARMUP programs (bench_tune --warmup; unset: a whole round). LINEAGES (default
# "gpu-h100 x86-24c"): the lineage models the lineage step trains (the cpu step needs x86-24c).
#
#   scripts/gpu/tune_study.sh stage        # here; then on the GPU machine, from the repository root:
#   run(carry=[".gpu"], command="bash scripts/gpu/tune_study.sh build lineage smoke")
#   run(carry=[".gpu"], command="bash scripts/gpu/tune_study.sh gpu resnet50 500 1,2,3")  # within 30 s: warm
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
OUT=${OUT:-/tmp/tcl-tune-out}
BUILD=${BUILD:-/tmp/tcl-gpu-build}
LOGS=$OUT/logs
mkdir -p "$OUT" "$LOGS"
export LD_LIBRARY_PATH="$root/.gpu/xgboost/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PYTORCH_CUDA_ALLOC_CONF=${PYTORCH_CUDA_ALLOC_CONF:-expandable_segments:True}
LINEAGE=/tmp/tcl-tune-lineage  # kept between calls on one machine
RUNS=/tmp/tcl-tune-runs
half=$(($(nproc) / 2))
lower=0-$((half - 1)) upper=$half-$(($(nproc) - 1))
deadline=$((SECONDS + ${BUDGET_S:-570}))
left() { echo $((deadline - SECONDS)); }
models=${MODELS:-lineage lineage+online online random}
lineages=${LINEAGES:-gpu-h100 x86-24c}
warmup=()
[ -n "${WARMUP:-}" ] && warmup=(--warmup "$WARMUP")

stage() {
  mkdir -p .gpu/shared/data/x86-24c
  bash scripts/gpu/stage_libs.sh .gpu
  cp ../shared/data/x86-24c/records.jsonl.gz .gpu/shared/data/x86-24c/
  du -sh .gpu
}

build() {
  local prefix t0=$SECONDS
  prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
  { cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTCL_TRAINER_ONLY=ON -DTCL_BUILD_TESTS=OFF \
      -DCMAKE_PREFIX_PATH="$prefix" -DTCL_PROGRAM_OPTIONS_ROOT="$root/.gpu/program_options" \
      -DTCL_XGBOOST_ROOT="$root/.gpu/xgboost" -DTCL_CUDA_MEASURE=ON &&
    cmake --build "$BUILD" --target bench_train bench_tune tcl-measure -j "$(nproc)"; } >"$LOGS/build.log" 2>&1 ||
    { tail -n 40 "$LOGS/build.log"; return 1; }
  echo "== build: $((SECONDS - t0)) s"
}

lineage() {
  local name data
  for name in $lineages; do
    data=$root/tests/data/gpu-h100
    [ "$name" = x86-24c ] && data=$root/.gpu/shared/data/x86-24c
    [ -s "$LINEAGE/$name/checkpoint" ] && continue
    if [ -s ".gpu/lineage/$name.checkpoint" ]; then  # trained by an earlier call, carried back
      mkdir -p "$LINEAGE/$name" && cp ".gpu/lineage/$name.checkpoint" "$LINEAGE/$name/checkpoint" && continue
    fi
    "$BUILD/bench/bench_train" --data "$data" --device cuda --out "$LINEAGE/$name" >"$LOGS/lineage-$name.log" 2>&1 ||
      { tail -n 20 "$LOGS/lineage-$name.log"; return 1; }
    tail -n 3 "$LOGS/lineage-$name.log"
  done
  mkdir -p "$OUT/lineage"
  for name in $lineages; do cp "$LINEAGE/$name/checkpoint" "$OUT/lineage/$name.checkpoint"; done
}

# smoke: the lineage model for 2 rounds of 2 tasks on the GPU, measured by tcl-measure in its own
# process (bench_tune --measure-command: measuring inside a process that loaded PyTorch's LibTorch
# crashed on this machine, on the CPU and the GPU alike); a crash shows its stack.
smoke() {
  local debug=() rc=0 run
  command -v gdb >/dev/null && debug=(gdb -q -batch -ex run -ex bt --args)
  for run in "cuda lineage gpu-h100"; do
    set -- $run
    local ckpt=()
    [ "$3" != none ] && ckpt=(--checkpoint "$LINEAGE/$3/checkpoint")
    "${debug[@]}" "$BUILD/bench/bench_tune" --target "$1" --models "$2" --network resnet50 --first-tasks 2 --budget 32 \
      --seeds 1 "${ckpt[@]}" --measure-command "$BUILD/measure/tcl-measure" --out "$RUNS/smoke" \
      >"$LOGS/smoke.log" 2>&1
    rc=$?
    echo "== smoke $run: rc $rc"; tail -n 3 "$LOGS/smoke.log"
    [ $rc -eq 0 ] || return 1
  done
}

# gpu NETWORK BUDGET SEEDS: seed by seed, the four models in turn on GPU 0 (one run at a time: runs
# side by side on one GPU would time each other's kernels), each under what is left of BUDGET_S; a
# run cut short resumes at the next call on a warm machine (its folder stays in $RUNS).
gpu() {
  local network=$1 budget=$2 seeds=$3 seed model
  for seed in ${seeds//,/ }; do
    for model in $models; do
      [ "$(left)" -le 20 ] && { echo "== $network $model s$seed: no time left"; continue; }
      timeout "$(left)" taskset -c "$lower" "$BUILD/bench/bench_tune" --target cuda --network "$network" --budget "$budget" \
        --seeds "$seed" --models "$model" "${warmup[@]}" --threads 4 --checkpoint "$LINEAGE/gpu-h100/checkpoint" --out "$RUNS" \
        --measure-command "$BUILD/measure/tcl-measure" \
        >>"$LOGS/$network.out" 2>"$LOGS/$network-${model//+/-}-s$seed.err"
      echo "== $network $model s$seed: rc $? at $SECONDS s"
    done
  done
  cat "$LOGS/$network.out"
}

# cpu NETWORK BUDGET SEEDS: as gpu, on the CPU's upper half (taskset; tcl-measure's threads as many),
# in the background; the script waits for it before collecting.
cpu() {
  local network=$1 budget=$2 seeds=$3 seed model
  for seed in ${seeds//,/ }; do
    for model in $models; do
      [ "$(left)" -le 20 ] && { echo "== cpu $network $model s$seed: no time left"; continue; }
      timeout "$(left)" taskset -c "$upper" "$BUILD/bench/bench_tune" --target cpu --network "$network" \
        --budget "$budget" --seeds "$seed" --models "$model" "${warmup[@]}" --threads 2 --measure-threads "$half" \
        --checkpoint "$LINEAGE/x86-24c/checkpoint" --out "$RUNS/cpu" --measure-command "$BUILD/measure/tcl-measure" \
        >>"$LOGS/cpu-$network.out" 2>"$LOGS/cpu-$network-${model//+/-}-s$seed.err"
      echo "== cpu $network $model s$seed: rc $? at $SECONDS s"
    done
  done >"$LOGS/cpu-$network.log" 2>&1
}

# restore: an earlier session's collect archive into the empty runs folder (a warm machine keeps its own).
restore() {
  [ -s .gpu/tune-runs.tar.gz ] || return 0
  [ -n "$(ls -A "$RUNS" 2>/dev/null)" ] && return 0
  mkdir -p "$RUNS" && tar -xzf .gpu/tune-runs.tar.gz -C "$RUNS" && echo "== restore: $(ls "$RUNS" | wc -l) runs"
}

# The runs' folders as one archive in $OUT: the device tool brings back a bounded number of files,
# none with a '+' in its name.
collect() { [ -d "$RUNS" ] && tar -czf "$OUT/tune-runs.tar.gz" -C "$RUNS" --exclude=.lock . ; }

while [ $# -gt 0 ]; do
  step=$1
  shift
  case $step in
    stage | restore | build | lineage) "$step" || exit 1 ;;
    smoke) smoke || exit 1 ;;
    gpu) gpu "$1" "$2" "$3"; shift 3 ;;
    cpu) cpu "$1" "$2" "$3" & shift 3 ;;
    anchors) python3 scripts/gpu/tune_anchors.py "$RUNS" "$1" | tee "$OUT/anchors-$1.md"; shift ;;
    *) echo "unknown step $step" >&2; exit 2 ;;
  esac
done
wait  # the cpu step
cat "$LOGS"/cpu-*.log "$LOGS"/cpu-*.out 2>/dev/null
collect
