#!/usr/bin/env bash
# scripts/gpu/build.sh BUILD PO_ROOT LOG TARGET... — configure (once) and build
# TARGETs of a TCL_TRAINER_ONLY Release build (with tcl-measure's CUDA backend,
# TCL_CUDA_MEASURE) against the LibTorch inside the
# machine's PyTorch, with Debian's Boost.Program_options from PO_ROOT (staged
# by scripts/gpu/stage_libs.sh), and XGBoost (the tuner's online model, which every
# build links since tuner/ is in it) from PO_ROOT's sibling folder xgboost/ (staged
# beside it by the same script). Prints the log's tail and fails when the build does.
# Builds of one BUILD folder wait for each other (a lock in it).
set -uo pipefail
build=$1 po=$2 log=$3
shift 3
prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
xgboost=()
xgb_root=$(cd "$po/.." && pwd)/xgboost
[ -d "$xgb_root" ] && xgboost=(-DTCL_XGBOOST_ROOT="$xgb_root")
t0=$SECONDS
# Studies started side by side share one build folder: one build at a time
# (a second configure or link beside a first breaks both).
mkdir -p "$build"
exec 9>"$build/.build.lock"
flock 9
{ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTCL_TRAINER_ONLY=ON -DCMAKE_PREFIX_PATH="$prefix" \
    -DTCL_PROGRAM_OPTIONS_ROOT="$po" "${xgboost[@]}" -DTCL_CUDA_MEASURE=ON && cmake --build "$build" --target "$@" -j "$(nproc)"; } >"$log" 2>&1 ||
  { tail -n 40 "$log"; exit 1; }
echo "== build ($*): $((SECONDS - t0)) s"
