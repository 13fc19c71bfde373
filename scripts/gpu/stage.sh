#!/usr/bin/env bash
# scripts/gpu/stage.sh DEST [REV] — what the scripts in scripts/gpu/ need on
# a GPU machine, in one folder to copy there: REV's tree (default HEAD) in
# DEST/src, every platform's records in DEST/shared/data (where the tests and
# the scripts look, ../shared/data from the source), and Debian's static
# Boost.Program_options and XGBoost in DEST/program_options and DEST/xgboost
# (scripts/gpu/stage_libs.sh: that machine has Boost's headers but no compiled
# Boost, and no XGBoost; scripts/gpu/build.sh finds both). The records are
# never committed; DEST must be outside the repository or ignored by it.
#
#   scripts/gpu/stage.sh ../main/.gpu && (on the GPU machine) cd .gpu/src && bash scripts/gpu/train_on_gpu.sh
set -euo pipefail
dest=${1:?usage: scripts/gpu/stage.sh DEST [REV]}
rev=${2:-HEAD}
repo=$(cd "$(dirname "$0")/../.." && pwd)
data=${DATA:-$repo/../shared/data}
rm -rf "$dest/src"
mkdir -p "$dest/src" "$dest/shared/data"
git -C "$repo" archive --format=tar "$rev" | tar -x -C "$dest/src"
for p in x86-24c x86-16c gpu-2080ti gpu-v100; do
  mkdir -p "$dest/shared/data/$p"
  cp "$data/$p/records.jsonl.gz" "$dest/shared/data/$p/"
done
bash "$repo/scripts/gpu/stage_libs.sh" "$dest"
du -sh "$dest"
