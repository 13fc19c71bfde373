#!/usr/bin/env bash
# scripts/gpu/train_on_gpu.sh — the trainer on a machine with an NVIDIA GPU
# (issue 19 item 2): build core/ + trainer/ + the training benches and tests
# against the LibTorch inside the machine's PyTorch (TCL_TRAINER_ONLY: no
# database or HTTP libraries), run the CUDA test against the CPU, then time
# tcld's default train job on all of x86-24c and a default distill of that
# model into x86-16c on CUDA (bench_train). Figures: docs/benchmarks.md,
# "Training on CUDA".
#
#   scripts/gpu/train_on_gpu.sh [STAGE...]    stages: env build test suite train distill
#                                             (default: env build test train distill)
# Environment:
#   DATA      folder with x86-24c/ and x86-16c/records.jsonl.gz (default ../shared/data,
#             where the tests read them too)
#   BUILD     build folder (default /tmp/tcl-gpu-build; kept between runs on one machine)
#   LOGS      logs, and the teacher's checkpoint and Fisher (default $OUT, else /tmp/tcl-gpu-logs)
#   BUDGET_S  seconds for all stages together (default 560); a stage gets what is left
#
# On this workplace's device machine (its `run` tool copies the repository it
# was started from, not a worktree): copy a commit and the data into an
# ignored folder of that checkout, then run from there, e.g.
#   git archive HEAD | tar -x -C ../main/.gpu/src; cp -r ../shared/data/{x86-24c,x86-16c} ../main/.gpu/shared/data/
#   run(carry=[".gpu"], command="cd .gpu/src && bash scripts/gpu/train_on_gpu.sh")
set -uo pipefail
cd "$(dirname "$0")/../.."

DATA=${DATA:-$(cd .. && pwd)/shared/data}
BUILD=${BUILD:-/tmp/tcl-gpu-build}
LOGS=${LOGS:-${OUT:-/tmp/tcl-gpu-logs}}
WORK=/tmp/tcl-gpu-work  # the teacher, kept between runs on one machine
deadline=$((SECONDS + ${BUDGET_S:-560}))
mkdir -p "$LOGS" "$WORK"
stages=("$@")
[ ${#stages[@]} -eq 0 ] && stages=(env build test train distill)

left() { echo $((deadline - SECONDS)); }
# run_stage NAME CMD...: CMD under what is left of the budget, output to LOGS/NAME.log.
run_stage() {
  local name=$1
  shift
  if [ "$(left)" -le 5 ]; then
    echo "== $name: skipped, no time left" | tee -a "$LOGS/$name.log"
    return 1
  fi
  echo "== $name ($(left) s left): $*"
  local t0=$SECONDS
  timeout "$(left)" "$@" >"$LOGS/$name.log" 2>&1
  local rc=$?
  echo "== $name: rc $rc in $((SECONDS - t0)) s" | tee -a "$LOGS/$name.log"
  tail -n 25 "$LOGS/$name.log"
  return $rc
}

for stage in "${stages[@]}"; do
  case $stage in
    env)
      run_stage env bash -c 'nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv; nproc;
        python3 -c "import torch; print(\"torch\", torch.__version__, \"cuda\", torch.version.cuda, torch.cuda.is_available())";
        cmake --version | head -1; ninja --version; g++ --version | head -1; ls /usr/include/zlib.h /usr/include/boost/version.hpp'
      ;;
    build)
      prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
      run_stage build bash -c "cmake -S . -B '$BUILD' -G Ninja -DCMAKE_BUILD_TYPE=Release -DTCL_TRAINER_ONLY=ON \
          -DCMAKE_PREFIX_PATH='$prefix' -DTCL_PROGRAM_OPTIONS_ROOT='$(cd .. && pwd)/program_options' &&
          cmake --build '$BUILD' -j $(nproc)" || exit 1
      ;;
    test)  # CUDA against the CPU, then the device and scan tests
      run_stage test bash -c "'$BUILD/tests/trainer/trainer_cuda_test' && \
          '$BUILD/tests/trainer/trainer_train_job_test' --gtest_filter='DeviceTest.*' && \
          '$BUILD/tests/trainer/trainer_test' --gtest_filter='SelectiveScanTest.*'"
      ;;
    suite)  # every trainer test, on CUDA where the trainer picks it (device auto)
      run_stage suite ctest --test-dir "$BUILD" --output-on-failure -j 4 --timeout 300
      ;;
    train)  # the default train job: all of x86-24c; its model is the distill's teacher
      run_stage train_cuda "$BUILD/bench/bench_train" --data "$DATA/x86-24c" --device cuda --out "$WORK/teacher" &&
        mkdir -p "$LOGS/teacher" && cp "$WORK/teacher/checkpoint" "$WORK/teacher/fisher" "$LOGS/teacher/"
      ;;
    distill)  # the default distill job into x86-16c from that teacher
      run_stage distill_cuda "$BUILD/bench/bench_train" --distill --data "$DATA/x86-16c" --teacher "$WORK/teacher" \
        --teacher-data "$DATA/x86-24c" --device cuda
      ;;
    *)
      echo "unknown stage $stage (env build test suite train distill)" >&2
      exit 2
      ;;
  esac
done
