#!/usr/bin/env bash
# scripts/gpu/stage.sh DEST [REV] — what scripts/gpu/train_on_gpu.sh needs on
# a GPU machine, in one folder to copy there: REV's tree (default HEAD) in
# DEST/src and the x86-24c and x86-16c records in DEST/shared/data (where the
# tests and the script look, ../shared/data from the source). The records are
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
for p in x86-24c x86-16c; do
  mkdir -p "$dest/shared/data/$p"
  cp "$data/$p/records.jsonl.gz" "$dest/shared/data/$p/"
done
du -sh "$dest"
