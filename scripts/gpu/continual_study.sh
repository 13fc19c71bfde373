#!/usr/bin/env bash
# scripts/gpu/continual_study.sh — issue 19 item 3 on a machine with an NVIDIA
# GPU: forgetting measured where it shows. bench_continual along
# x86-24c → x86-16c → gpu-2080ti → gpu-v100 (30% of each platform's tasks held
# out, salt 0: 119 of x86-24c's 396 tasks), distillation against plain
# fine-tuning and joint training on the same 10% rdu selections, one process
# per seed, the seeds side by side on the one GPU. Before the runs, the CUDA
# test (one step of the production batch and loss code on CUDA against the CPU).
# Each seed's tables are in LOGS/continual-sSEED/RESULTS.md; scripts/gpu/
# continual_summary.py prints mean and 95% t-intervals over the seeds, and
# scripts/gpu/continual_steps.py the same from the per-step lines of the logs
# (for runs the budget stopped, and runs whose main and extra lineages differ).
#
#   scripts/gpu/continual_study.sh [SEED...]      (default: 1 2 3)
# Environment:
#   DATA      folder with the platforms' records.jsonl.gz (default ../shared/data)
#   BUILD     build folder (default /tmp/tcl-gpu-build; kept between runs on one machine)
#   LOGS      logs (default /tmp/tcl-gpu-logs; all of them in $OUT/logs.tgz at the end when OUT is set)
#   PO_ROOT   Debian's Boost.Program_options (default ../program_options, from scripts/gpu/stage.sh)
#   BUDGET_S  seconds for the runs together (default 540); partial tables are kept
#   METHODS   bench_continual --methods (default distill,ft,b)
#   EXTRA     bench_continual --extra-distill OLD,EWC[,UNLABELED[,COLUMN]] (a second distill lineage, its column
#             weight constant, as before session 19; default none)
#   BANK      bench_continual --old-bank N (the covered platforms' programs as old-KD inputs; default none)
#   FLAGS     more bench_continual flags (e.g. "--epochs 12"; default none)
#   VALIDATION  > 0: choose, do not report (bench_continual --validation: the held-out split dropped,
#             this share of each pool's tasks scored instead); give it a LOGS of its own
#   CUDA_TEST 0: skip the CUDA test (another study beside this one ran it)
#   CACHE     bench_continual --cache (default /tmp/tcl-gpu-work/continual-cache); two studies
#             side by side that share seeds need one each (their runs would write the same files)
#   THREADS   threads per seed (default the machine's cores over the seeds). The count is in the
#             base's cache key and changes the results: keep it equal across studies you compare
#
# On this workplace's device machine: scripts/gpu/stage.sh ../main/.gpu, then
#   run(carry=[".gpu"], command="cd .gpu/src && bash scripts/gpu/continual_study.sh")
set -uo pipefail
cd "$(dirname "$0")/../.."

source scripts/gpu/env.sh  # DATA, BUILD, LOGS, PO_ROOT
deadline=$((SECONDS + ${BUDGET_S:-540}))
seeds=("$@")
[ ${#seeds[@]} -eq 0 ] && seeds=(1 2 3)
mkdir -p "$LOGS"

bash scripts/gpu/build.sh "$BUILD" "$PO_ROOT" "$LOGS/build.log" bench_continual trainer_cuda_test || exit 1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
if [ "${CUDA_TEST:-1}" = 1 ]; then
  timeout 120 "$BUILD/tests/trainer/trainer_cuda_test" >"$LOGS/cuda_test.log" 2>&1
  echo "== trainer_cuda_test: rc $?"; tail -n 15 "$LOGS/cuda_test.log"
fi

threads=${THREADS:-$(($(nproc) / ${#seeds[@]}))}
for s in "${seeds[@]}"; do
  timeout $((deadline - SECONDS)) nice "$BUILD/bench/bench_continual" --data "$DATA" --out "$LOGS/continual-s$s" \
    --cache "${CACHE:-/tmp/tcl-gpu-work/continual-cache}" --platforms x86-24c,x86-16c,gpu-2080ti,gpu-v100 \
    --methods "${METHODS:-distill,ft,b}" ${EXTRA:+--extra-distill "$EXTRA"} ${BANK:+--old-bank "$BANK"} ${VALIDATION:+--validation "$VALIDATION"} ${FLAGS:-} --seed "$s" --device cuda --threads "$threads" \
    >"$LOGS/continual-s$s.log" 2>&1 &
done
wait
for s in "${seeds[@]}"; do echo "== seed $s"; tail -n 5 "$LOGS/continual-s$s.log"; done
# The device tool brings back a few files only: every log in one archive under $OUT.
[ -n "${OUT:-}" ] && tar -czf "$OUT/logs.tgz" -C "$LOGS" .
