#!/usr/bin/env bash
# bench/tune_onboard.sh [BUILD] — issue 47's "a platform the lineage has never seen", on this machine:
# its first tuning runs with an x86-24c lineage (zero-shot: the lineage has never seen this CPU), then
# the same runs after this machine was onboarded with 10% of a pool picked by the sampler
# (`tclctl onboard --measure-local`: the daemon's default sampler and distill; the distill was the adapter
# until 2026-12-04, best-of since: docs/tuning.md's runs are the adapter's). One throwaway
# PostgreSQL and tcld (bench/lib/tune_stack.sh). The tuning runs do not upload (--upload 0), so the
# onboarding's measurements are all the lineage learns of this machine, and the onboarding pool is of
# other networks than the one tuned (POOL_MODELS), so no tuned task is in it.
#   cmake --build build --target tcld tclctl && bench/tune_onboard.sh build
# Environment: OUT (default /tmp/tune-onboard), SEEDS (default "1 2 3"), NETWORK (bert), BUDGET (160),
#   BASE_RECORDS (x86-24c records the lineage trains on, 40000), POOL_MODELS (resnet50,mobilenet_v2),
#   MODELS (tclctl tune's --model values, "lineage random"; after onboarding only the lineage ones run),
#   PER_TASK (48: a round's 5% of the pool must give each of its 56 tasks 2 picks), DATA (../shared/data).
#   Tables: bench/tune_summary.py OUT/before and OUT/after.
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(cd "${1:-build}" && pwd)
data=${DATA:-$(cd .. && pwd)/shared/data}
out=${OUT:-/tmp/tune-onboard}
network=${NETWORK:-bert}
seeds=${SEEDS:-1 2 3}
models=${MODELS:-lineage random}
pool_models=${POOL_MODELS:-resnet50,mobilenet_v2}
per_task=${PER_TASK:-48}
source bench/lib/tune_stack.sh
tune_stack_start "$build" "$data" "$out"
# tune LABEL MODEL SEED [tclctl tune flags]: one run into OUT/LABEL/NETWORK-MODEL-sSEED, no upload.
tune() { tune_run "$1" "$network" "$2" "$3" "${BUDGET:-160}" --upload 0 "${@:4}"; }

for s in $seeds; do
  for m in $models; do tune before "$m" "$s"; done
done

stamp "onboard this-machine: $pool_models, $per_task programs a task, 10% in 2 rounds of 5%"
"$ctl" onboard --platform this-machine --measure-local --models "$pool_models" \
  --per-task "$per_task" --rounds 2 --fraction 0.05 --state "$out/onboard.state.json" \
  >"$out/onboard.log" 2>&1
tail -n 6 "$out/onboard.log"
# The newest version holds this machine's adapter, promoted or not: the "after" runs name it.
version=$(newest_version)
stamp "after: version $version"

for s in $seeds; do
  for m in $models; do
    if [[ $m == lineage* ]]; then tune after "$m" "$s" --lineage-model "$version"; fi
  done
done
stamp "done"
for label in before after; do
  echo "### $label"
  python3 bench/tune_summary.py "$out/$label" || true
done | tee "$out/summary.md"
