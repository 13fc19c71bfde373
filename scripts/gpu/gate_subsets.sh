#!/usr/bin/env bash
# scripts/gpu/gate_subsets.sh ARM=FLAGS ... — bench/gate_check.sh on CUDA where a 10% distill forgets
# (issue 19 item 4): one teacher (the default train job on gpu-v100, seed 0) distilled into SUBSETS 10%
# draws of tests/data/gpu-h100 (bench/lib/subset_records.py, seed = the subset) under every arm's
# bench_train flags, then the promotion gate on gpu-v100. The CPU check of docs/benchmarks.md ("A 10%
# distill forgets more") on CUDA, under the jobs' time budgets (each log says how many epochs ran;
# in session 27's runs every one did). Arms pair by subset: each subset's runs share the teacher, the
# records and the training seed (the subset's). A LOGS that holds a teacher reuses it.
#   scripts/gpu/gate_subsets.sh default= lr4="--student-lr 0.004"   (logs in LOGS/ARM/seed-S)
# Environment: SUBSETS (default "1 2 3 4 5 6 7 8"), PARALLEL runs side by side (default 12), GPUS
# (default 1: the runs are spread over CUDA devices 0..GPUS-1), THREADS per run (default the cores over
# PARALLEL); DATA, BUILD, LOGS, PO_ROOT as scripts/gpu/env.sh.
# Then, here: scripts/gpu/gate_summary.py LOGS/default LOGS/lr4
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/gpu/env.sh  # DATA, BUILD, LOGS, PO_ROOT
[ $# -ge 1 ] || { echo "usage: scripts/gpu/gate_subsets.sh ARM=FLAGS ..." >&2; exit 2; }
read -r -a subsets <<<"${SUBSETS:-1 2 3 4 5 6 7 8}"
parallel=${PARALLEL:-12}
gpus=${GPUS:-1}
[ "$parallel" -ge 1 ] 2>/dev/null && [ "$gpus" -ge 1 ] 2>/dev/null || { echo "PARALLEL and GPUS: numbers >= 1" >&2; exit 2; }
names=()
for arm in "$@"; do
  [[ $arm == [A-Za-z0-9_]*=* ]] || { echo "an arm is NAME=FLAGS (FLAGS may be empty): $arm" >&2; exit 2; }
  for n in "${names[@]}"; do [ "$n" != "${arm%%=*}" ] || { echo "two arms named ${arm%%=*}" >&2; exit 2; }; done
  names+=("${arm%%=*}")
done
threads=${THREADS:-$(($(nproc) / parallel > 0 ? $(nproc) / parallel : 1))}
mkdir -p "$LOGS/records"
bash scripts/gpu/build.sh "$BUILD" "$PO_ROOT" "$LOGS/build.log" bench_train bench_gate || exit 1
for s in "${subsets[@]}"; do
  python3 bench/lib/subset_records.py tests/data/gpu-h100/records.jsonl.gz 0.1 "$s" "$LOGS/records/s$s.jsonl.gz" ||
    exit 1
done
# The teacher, alone and once: every run reads it (bench/gate_check.sh's TEACHER).
teacher=$LOGS/teacher
[ -f "$teacher/checkpoint" ] ||
  "$BUILD/bench/bench_train" --data "$DATA/gpu-v100" --device cuda --seed 0 --threads "$(nproc)" \
    --out "$teacher" >"$LOGS/teacher.log" 2>&1 || { tail -n 20 "$LOGS/teacher.log"; exit 1; }
grep -v '^  ' "$LOGS/teacher.log" | tail -n 3
runs=()
for arm in "$@"; do
  for s in "${subsets[@]}"; do runs+=("${arm%%=*}|${arm#*=}|$s"); done
done
run_one() {  # ARM FLAGS SUBSET GPU
  mkdir -p "$LOGS/$1"
  CUDA_VISIBLE_DEVICES=$4 DATA=$DATA DEVICE=cuda SEED=$3 THREADS=$threads TEACHER=$teacher \
    NEW_DATA="$LOGS/records/s$3.jsonl.gz" DISTILL_FLAGS="$2" bash bench/gate_check.sh "$BUILD" "$LOGS/$1/seed-$3" \
    >"$LOGS/$1/seed-$3.out" 2>&1
}
rc=0
for ((i = 0; i < ${#runs[@]}; i += parallel)); do
  pids=()
  for ((j = i; j < i + parallel && j < ${#runs[@]}; ++j)); do
    IFS='|' read -r arm flags s <<<"${runs[j]}"
    run_one "$arm" "$flags" "$s" $((j % gpus)) &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
done
for arm in "$@"; do
  echo "== ${arm%%=*} (${arm#*=})"
  for s in "${subsets[@]}"; do
    verdict=$(grep -h "^all:" "$LOGS/${arm%%=*}/seed-$s/gate.log" 2>/dev/null | cut -c1-150)
    echo "seed-$s: ${verdict:-MISSING (see $LOGS/${arm%%=*}/seed-$s.out)}"
  done
done
exit $rc
