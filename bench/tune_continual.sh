#!/usr/bin/env bash
# bench/tune_continual.sh [BUILD] — issue 47's continual effect, on this machine: tune a first network
# (FIRST, ResNet-50) with its measurements uploaded to the platform as they come, let them reach the
# lineage through the daemon's default distill job, then tune a second network (SECOND, MobileNet-V2)
# against the lineage before (version 1: x86-24c's train job, which never saw this machine) and after
# (the distill's version), seed by seed. The first run also gives the physical anchors (bench_tune
# --anchors: LibTorch's operator and the roofline on this CPU, per task). One throwaway PostgreSQL and
# tcld (bench/lib/tune_stack.sh).
#   cmake --build build --target tcld tclctl bench_tune && bench/tune_continual.sh build
# Environment: OUT (default /tmp/tune-continual), DATA (../shared/data), BASE_RECORDS (40000),
#   FIRST (resnet50), FIRST_BUDGET (1000), FIRST_MODEL (lineage+online: tclctl tune's default), FIRST_SEED (1),
#   SECOND (mobilenet_v2), SECOND_BUDGET (384), SECOND_PER_ROUND (8: MobileNet-V2's 32 tasks warm up in 256),
#   SEEDS (the second network's, "1 2 3"), MODELS (its lineage models, "lineage"; lineage+online too),
#   SECOND_WARMUP (unset: a whole first round per task; N: tclctl tune --warmup N for every second-network run),
#   DISTILL_METHOD (unset: the daemon's default distill; adapter, student or best-of),
#   BASELINES (models without a lineage, e.g. "random online": run on the second network after each seed's
#   before and after, into OUT/baselines; unset: none, run them apart with tclctl tune ... --upload 0).
#   Tables: OUT/summary.md (bench/tune_summary.py OUT/before --after OUT/after, the anchors, and with
#   BASELINES OUT/all-after: the after-runs beside the baselines, for the search-time speedup).
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(cd "${1:-build}" && pwd)
data=${DATA:-$(cd .. && pwd)/shared/data}
out=${OUT:-/tmp/tune-continual}
first=${FIRST:-resnet50}
second=${SECOND:-mobilenet_v2}
seeds=${SEEDS:-1 2 3}
models=${MODELS:-lineage}
source bench/lib/tune_stack.sh
tune_stack_start "$build" "$data" "$out"

# The first network: every round's measurements go to this-machine as they come (tclctl tune's default).
tune_run first "$first" "${FIRST_MODEL:-lineage+online}" "${FIRST_SEED:-1}" "${FIRST_BUDGET:-1000}"
# The daemon's default method: best-of since 2026-12-04, the adapter before (docs/tuning.md's runs of
# 2026-12-03: DISTILL_METHOD=adapter reproduces them).
stamp "the distill job on this-machine (${DISTILL_METHOD:-the daemon's default method})"
"$ctl" job start --platform this-machine --kind distill ${DISTILL_METHOD:+--method "$DISTILL_METHOD"} --wait 2>"$out/distill.log"
tail -n 3 "$out/distill.log"
version=$(newest_version)
if [[ $version == 1 ]]; then echo "the distill made no version: before and after would be the same" >&2; exit 1; fi
stamp "version $version holds this-machine's model: the second network before (1) and after ($version)"

# Before and after alternate seed by seed, so that a drift of the machine falls on both alike. The
# second network's runs upload nothing: what the lineage knows of this machine is the first run.
second_flags=(--per-round "${SECOND_PER_ROUND:-8}" --upload 0)
[[ -n ${SECOND_WARMUP:-} ]] && second_flags+=(--warmup "$SECOND_WARMUP")
second_run() { tune_run "$1" "$second" "$2" "$3" "${SECOND_BUDGET:-384}" "${second_flags[@]}" --lineage-model "$4"; }
for s in $seeds; do
  for m in $models; do  # only the lineage's models know a version (random and online: tclctl tune alone)
    if [[ $m == lineage* ]]; then
      second_run before "$m" "$s" 1
      second_run after "$m" "$s" "$version"
    fi
  done
  for m in ${BASELINES:-}; do
    tune_run baselines "$second" "$m" "$s" "${SECOND_BUDGET:-384}" "${second_flags[@]}"
  done
done
if [[ -n ${BASELINES:-} ]]; then  # the speedup's runs side by side (tune_summary.py reads one folder)
  mkdir -p "$out/all-after"
  ln -sfn "$out"/after/* "$out"/baselines/* "$out/all-after/"
fi
stamp "anchors of the first network"
"$build/bench/bench_tune" --anchors --network "$first" --out "$out/first" >"$out/anchors.md" 2>"$out/anchors.log" || true
stamp "done"
{
  echo "### the first network ($first)"
  python3 bench/tune_summary.py "$out/first" || true
  cat "$out/anchors.md"
  echo "### the second network ($second): before and after the first run reached the lineage"
  python3 bench/tune_summary.py "$out/before" --after "$out/after" || true
  if [[ -n ${BASELINES:-} ]]; then
    echo "### the second network: the lineage after, beside the baselines"
    python3 bench/tune_summary.py "$out/all-after" || true
  fi
} | tee "$out/summary.md"
