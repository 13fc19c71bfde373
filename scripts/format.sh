#!/usr/bin/env bash
# Every tracked .h and .cc formatted by .clang-format (clang-format 14, Debian 12's).
#
#   scripts/format.sh          check: list the files that differ, exit 1 if any (scripts/test.sh runs this)
#   scripts/format.sh --fix    rewrite them in place
set -euo pipefail
cd "$(dirname "$0")/.."
formatter=$(command -v clang-format-14 || command -v clang-format)
mapfile -t files < <(git ls-files '*.h' '*.cc')
if [[ "${1:-}" == "--fix" ]]; then
  "$formatter" -i "${files[@]}"
  exit 0
fi
differ=()
for f in "${files[@]}"; do
  if ! "$formatter" --dry-run -Werror "$f" >/dev/null 2>&1; then differ+=("$f"); fi
done
if (( ${#differ[@]} > 0 )); then
  echo "scripts/format.sh: ${#differ[@]} file(s) not formatted (run scripts/format.sh --fix):" >&2
  printf '  %s\n' "${differ[@]}" >&2
  exit 1
fi
echo "scripts/format.sh: ${#files[@]} files formatted"
