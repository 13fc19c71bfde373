#!/usr/bin/env bash
# scripts/gpu/measure_pool.sh [MODEL...] — issue 21 on a machine with an NVIDIA GPU: builds
# tcl-measure with its CUDA backend, runs the backend's test on the device, then for each MODEL
# (default: bert resnet50) writes a candidate pool of the GPU sketch within the device's limits
# (PER_TASK schedules per task, default 200) and measures the whole pool on the GPU.
# Results in $OUT (default /tmp/tcl-gpu-pool): hardware.txt, cuda_backend_test.log,
# MODEL_cuda.jsonl.gz (the candidates), MODEL_measured.jsonl.gz and MODEL_measure.log.
#
# On this workplace's device machine: scripts/gpu/stage.sh ../main/.gpu, then
#   run(carry=[".gpu"], command="cd .gpu/src && bash scripts/gpu/measure_pool.sh")
# Environment: BUILD (default /tmp/tcl-gpu-build), PO_ROOT (default ../program_options),
#   SKIP_TEST=1 (the test passed already on this machine), MEASURE_FLAGS (tcl-measure run flags,
#   default --per-unit 64 --repeat 3 --min-repeat-ms 10).
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/gpu/env.sh  # BUILD, PO_ROOT
out=${OUT:-/tmp/tcl-gpu-pool}
mkdir -p "$out"
models=("$@")
[[ ${#models[@]} -gt 0 ]] || models=(bert resnet50)

bash scripts/gpu/build.sh "$BUILD" "$PO_ROOT" "$out/build.log" tcl-measure cuda_backend_test || exit 1
bin=$BUILD/measure/tcl-measure
"$bin" hardware --target cuda | tee "$out/hardware.txt"
if [[ "${SKIP_TEST:-0}" != 1 ]]; then
  t0=$SECONDS
  "$BUILD/tests/measure/cuda_backend_test" > "$out/cuda_backend_test.log" 2>&1
  echo "== cuda_backend_test: exit $? in $((SECONDS - t0)) s"
  grep -E "^\[  (PASSED|FAILED) |Failure|device:" "$out/cuda_backend_test.log" | head -30
fi
for model in "${models[@]}"; do
  pool=$out/${model}_cuda.jsonl measured=$out/${model}_measured.jsonl
  "$bin" candidates --model "$model" --target cuda --per-task "${PER_TASK:-200}" -o "$pool" || exit 1
  t0=$SECONDS
  # shellcheck disable=SC2086  # MEASURE_FLAGS is a list of flags
  "$bin" run "$pool" -o "$measured" ${MEASURE_FLAGS:---per-unit 64 --repeat 3 --min-repeat-ms 10} \
    2> "$out/${model}_measure.log"
  rc=$?
  echo "== $model: $(wc -l < "$measured") records measured in $((SECONDS - t0)) s (exit $rc)"
  # The failures by kind and reason (record numbers left out so that like ones count together).
  tr '\r' '\n' < "$out/${model}_measure.log" | grep -v "measured, " | sed -E 's/record [0-9]+: //' |
    cut -c1-160 | sort | uniq -c | sort -rn | head -8
  tr '\r' '\n' < "$out/${model}_measure.log" | grep "measured, " | tail -1
  gzip -f "$pool" "$measured"
done
