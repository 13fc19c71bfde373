#!/usr/bin/env bash
# Fuzzes the record parser with libFuzzer for a bounded time (default 60 s).
# The seed corpus is made at run time from ../shared/data/formats (never
# copied into the repository). Exit status non-zero on any crash.
#   scripts/fuzz.sh [seconds]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
build=${TCL_FUZZ_BUILD_DIR:-build-fuzz}
cmake -S . -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DTCL_FUZZ=ON -DTCL_BUILD_TESTS=OFF -DTCL_BUILD_TRAINER=OFF >/dev/null
cmake --build "$build" --target record_parser_fuzz
corpus="$build/fuzz-corpus"
mkdir -p "$corpus"
if [[ -d ../shared/data/formats ]]; then
  i=0
  for f in ../shared/data/formats/*.json; do
    head -n 5 "$f" | while IFS= read -r line; do
      i=$((i + 1)); printf '%s\n' "$line" >"$corpus/seed-$(basename "$f")-$i"
    done
  done
fi
"$build/tests/fuzz/record_parser_fuzz" -max_total_time="$seconds" -max_len=8192 -timeout=10 \
  -rss_limit_mb=2048 -print_final_stats=1 "$corpus" 2>&1 | tail -n 15
