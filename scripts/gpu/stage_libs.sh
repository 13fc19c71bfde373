#!/usr/bin/env bash
# scripts/gpu/stage_libs.sh DEST — the Debian libraries a GPU machine's build needs (it has no Debian
# packages), into DEST to carry there: Boost.Program_options (static, with its headers; the benches
# parse flags with it) in DEST/program_options, and XGBoost (tuner/'s online model, linked by every
# build since tuner/ is in it) in DEST/xgboost. scripts/gpu/build.sh finds both under .gpu/.
set -euo pipefail
dest=${1:?usage: scripts/gpu/stage_libs.sh DEST}
rm -rf "$dest/program_options" "$dest/xgboost"
mkdir -p "$dest/program_options/lib" "$dest/program_options/include/boost" "$dest/xgboost/lib" "$dest/xgboost/include"
cp /usr/lib/x86_64-linux-gnu/libboost_program_options.a "$dest/program_options/lib/"
cp -r /usr/include/boost/program_options /usr/include/boost/program_options.hpp "$dest/program_options/include/boost/"
cp -L /usr/lib/x86_64-linux-gnu/libxgboost.so.0 "$dest/xgboost/lib/libxgboost.so.0"
cp "$dest/xgboost/lib/libxgboost.so.0" "$dest/xgboost/lib/libxgboost.so"  # no links: a carried folder keeps files
cp -L /usr/lib/x86_64-linux-gnu/libdmlc.so.0 "$dest/xgboost/lib/"
cp -r /usr/include/xgboost "$dest/xgboost/include/"
