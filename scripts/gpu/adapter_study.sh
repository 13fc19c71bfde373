#!/usr/bin/env bash
# scripts/gpu/adapter_study.sh TEACHER:NEW ARM=FLAGS ... — the per-platform adapter (trainer/adapter.h)
# against plain fine-tuning on the same 10% (issue 19 item 4, docs/continual.md). TEACHER and NEW are
# platform folders of DATA (gpu-h100: tests/data/gpu-h100). The teacher: TEACHER's default train job
# on CUDA, seed 0, once. Then, for each subset s of SUBSETS, a 10% draw of NEW's records
# (bench/lib/subset_records.py, seed s) is fine-tuned from it by bench_train --distill --column-only
# --split-salt s under every arm's flags: the column (every weight, the job's fine-tune) and the arm's
# adapters (--adapter-rank ...), all judged on NEW's held-out tasks of salt s, whole tasks, so each
# subset is judged on other tasks. The teacher's own platforms lose nothing by construction: the adapter
# is the new platform's alone and the teacher's weights stay as they are.
#   scripts/gpu/adapter_study.sh gpu-v100:gpu-h100 lr2="--adapter-rank 4,16" lr10="--adapter-rank 4,16 --adapter-lr 0.01"
# STUDENT=1: the default distill's student too (no --column-only), judged on the same tasks; the old
# platforms' comparison follows it in the log.
# Environment: SUBSETS (default "1 2 3 4 5 6 7 8"), PARALLEL (default 8), GPUS (default 1), THREADS per
# run (default the cores over PARALLEL); DATA, BUILD, LOGS, PO_ROOT as scripts/gpu/env.sh.
# Logs: LOGS/TEACHER-NEW/ARM/seed-S.log. Then, here: scripts/gpu/adapter_summary.py LOGS/TEACHER-NEW/ARM ...
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/gpu/env.sh  # DATA, BUILD, LOGS, PO_ROOT
[ $# -ge 2 ] && [[ $1 == ?*:?* ]] || { echo "usage: scripts/gpu/adapter_study.sh TEACHER:NEW ARM=FLAGS ..." >&2; exit 2; }
teacher_platform=${1%%:*}
new_platform=${1#*:}
shift
folder() { [ "$1" = gpu-h100 ] && echo tests/data/gpu-h100 || echo "$DATA/$1"; }
read -r -a subsets <<<"${SUBSETS:-1 2 3 4 5 6 7 8}"
parallel=${PARALLEL:-8}
gpus=${GPUS:-1}
threads=${THREADS:-$(($(nproc) / parallel > 0 ? $(nproc) / parallel : 1))}
for arm in "$@"; do
  [[ $arm =~ ^[A-Za-z0-9_]+= ]] || { echo "an arm is NAME=FLAGS: $arm" >&2; exit 2; }
done
logs=$LOGS/$teacher_platform-$new_platform
mkdir -p "$logs/records"
bash scripts/gpu/build.sh "$BUILD" "$PO_ROOT" "$LOGS/build.log" bench_train || exit 1
for s in "${subsets[@]}"; do
  [ -f "$logs/records/s$s.jsonl.gz" ] ||
    python3 bench/lib/subset_records.py "$(folder "$new_platform")/records.jsonl.gz" 0.1 "$s" \
      "$logs/records/s$s.jsonl.gz" || exit 1
done
teacher=$LOGS/teacher-$teacher_platform  # shared by every case with this teacher
[ -f "$teacher/checkpoint" ] ||
  "$BUILD/bench/bench_train" --data "$(folder "$teacher_platform")" --device cuda --seed 0 --threads "$(nproc)" \
    --out "$teacher" >"$teacher.log" 2>&1 || { tail -n 20 "$teacher.log"; exit 1; }
grep -v '^  ' "$teacher.log" | tail -n 2
runs=()
for arm in "$@"; do
  for s in "${subsets[@]}"; do runs+=("${arm%%=*}|${arm#*=}|$s"); done
done
only=--column-only
[ "${STUDENT:-0}" = 1 ] && only=
rc=0
for ((i = 0; i < ${#runs[@]}; i += parallel)); do
  pids=()
  for ((j = i; j < i + parallel && j < ${#runs[@]}; ++j)); do
    IFS='|' read -r arm flags s <<<"${runs[j]}"
    mkdir -p "$logs/$arm"
    # shellcheck disable=SC2086  # the arm's flags are words
    CUDA_VISIBLE_DEVICES=$((j % gpus)) "$BUILD/bench/bench_train" --distill $only --device cuda \
      --data "$logs/records/s$s.jsonl.gz" --teacher "$teacher" --teacher-data "$(folder "$teacher_platform")" \
      --seed "$s" --split-salt "$s" --threads "$threads" $flags >"$logs/$arm/seed-$s.log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
done
for arm in "$@"; do
  echo "== ${arm%%=*} (${arm#*=})"
  grep -h "eval top-1" "$logs/${arm%%=*}"/seed-*.log | cut -c1-160 | head -n 4
done
exit $rc
