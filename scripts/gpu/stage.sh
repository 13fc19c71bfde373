#!/usr/bin/env bash
# scripts/gpu/stage.sh DEST [REV] — what the scripts in scripts/gpu/ need on
# a GPU machine, in one folder to copy there: REV's tree (default HEAD) in
# DEST/src, every platform's records in DEST/shared/data (where the tests and
# the scripts look, ../shared/data from the source), and Debian's static
# Boost.Program_options with its headers in DEST/program_options (that machine
# has Boost's headers but no compiled Boost; the benches parse flags with it:
# cmake -DTCL_PROGRAM_OPTIONS_ROOT=DEST/program_options). The records are
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
po="$dest/program_options"
rm -rf "$po"
mkdir -p "$po/lib" "$po/include/boost"
cp /usr/lib/x86_64-linux-gnu/libboost_program_options.a "$po/lib/"
cp -r /usr/include/boost/program_options /usr/include/boost/program_options.hpp "$po/include/boost/"
du -sh "$dest"
