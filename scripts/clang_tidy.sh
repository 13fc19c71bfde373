#!/usr/bin/env bash
# clang-tidy (the checks of .clang-tidy) over the product: every .cc of
# api/ core/ daemon/ measure/ onboarding/ registry/ sampler/ trainer/ tools/ tuner/
# that the build compiles, with the flags CMake recorded for it
# (compile_commands.json of the gcc build), reporting findings in those
# folders' .cc and .h files only. Fails on any finding that
# scripts/clang_tidy_baseline.txt does not list (the baseline is meant to be
# empty; see there), and on a file clang cannot compile.
#
# Left out: the trainer/ files that include LibTorch. clang 14 cannot parse
# LibTorch 1.13's headers against libstdc++ 12 in C++20 (c10::IValue is
# incomplete where std::vector<IValue>'s constexpr members need it), so
# neither this nor scripts/thread_safety.sh sees them; gcc builds them with
# -Wall -Wextra -Werror.
#
#   scripts/clang_tidy.sh [build-dir]      (default: build, or $TCL_BUILD_DIR)
# Findings and timings go to stdout; the full log is build-dir/clang-tidy/log.
set -euo pipefail
export LC_ALL=C  # one collation for sort and comm
cd "$(dirname "$0")/.."
build_dir=${1:-${TCL_BUILD_DIR:-build}}
db="$build_dir/compile_commands.json"
[[ -f "$db" ]] || { echo "clang_tidy.sh: no $db (configure the build first)" >&2; exit 2; }
tidy=${CLANG_TIDY:-/usr/bin/clang-tidy-14}
jobs=${TCL_JOBS:-$(nproc)}
out="$build_dir/clang-tidy"
folders="api core daemon measure onboarding registry sampler trainer tools tuner"
baseline=scripts/clang_tidy_baseline.txt
start=$SECONDS
mkdir -p "$out"

# A compile database of the product's files with gcc-only flags dropped (the
# precompiled header, -fpch-preprocess), and the list of files to check.
/usr/bin/python3 - "$db" "$out" "$folders" <<'PY'
import json, os, re, shlex, sys
db, out, folders = sys.argv[1], sys.argv[2], sys.argv[3].split()
root = os.getcwd() + "/"
include = re.compile(r'^\s*#\s*include\s*[<"]([^">]+)[">]', re.M)
torch_memo = {}
def uses_torch(path, seen=()):  # includes LibTorch, itself or through a header of ours
    if path not in torch_memo:
        text = open(path).read() if os.path.exists(path) else ""
        torch_memo[path] = any(h.startswith(("torch/", "ATen/", "c10/")) or
                               (h not in seen and os.path.exists(root + h) and uses_torch(root + h, seen + (h,)))
                               for h in include.findall(text))
    return torch_memo[path]
entries, files = [], []
for e in json.load(open(db)):
    f = e["file"]
    rel = f[len(root):] if f.startswith(root) else f
    if rel.split("/")[0] not in folders or uses_torch(f):
        continue
    args = shlex.split(e["command"])
    kept, i = [args[0]], 1
    while i < len(args):
        a = args[i]
        if a in ("-o", "-MF", "-MT", "-MQ") or (a == "-include" and args[i + 1].endswith("cmake_pch.hxx")):
            i += 2
            continue
        if a in ("-MD", "-MMD", "-fpch-preprocess") or a.startswith("-Winvalid-pch"):
            i += 1
            continue
        kept.append(a)
        i += 1
    entries.append({"directory": e["directory"], "file": f, "arguments": kept})
    files.append(f)
json.dump(entries, open(os.path.join(out, "compile_commands.json"), "w"))
open(os.path.join(out, "files"), "w").write("\n".join(files) + "\n")
PY
n=$(wc -l < "$out/files")
echo "clang_tidy.sh: $tidy over $n files, $jobs at a time"

# One clang-tidy per file; a header's findings show once per file that
# includes it, so they are made unique below.
header_filter="^$(pwd)/($(tr ' ' '|' <<< "$folders"))/"
rc=0
xargs -a "$out/files" -P "$jobs" -n 1 "$tidy" -p "$out" --quiet --header-filter="$header_filter" \
  > "$out/log" 2>&1 || rc=$?

# Findings as "path: message [check]" (no line numbers, so the baseline
# survives edits above a finding), one line per distinct place.
grep -E '^/.*:[0-9]+:[0-9]+: (warning|error): ' "$out/log" | sort -u |
  sed -E "s|^$(pwd)/||; s|^([^:]+):[0-9]+:[0-9]+: |\1: |" | sort > "$out/findings" || true
grep -vE '^(#|$)' "$baseline" | sort > "$out/baseline"
comm -23 "$out/findings" "$out/baseline" > "$out/new"
comm -13 "$out/findings" "$out/baseline" > "$out/gone"
echo "clang_tidy.sh: $(wc -l < "$out/findings") findings ($(wc -l < "$out/baseline") in the baseline) in $((SECONDS - start)) s"
if [[ -s "$out/gone" ]]; then
  echo "clang_tidy.sh: fixed, so delete these lines from $baseline:"
  sed 's/^/  /' "$out/gone"
fi
if [[ -s "$out/new" ]]; then
  echo "clang_tidy.sh: FAILED: findings not in $baseline (the full text is in $out/log):"
  grep -E '^/.*:[0-9]+:[0-9]+: (warning|error): ' "$out/log" | sort -u | sed "s|^$(pwd)/||" |
    grep -F -f <(sed -E 's/^([^:]+): (.*)$/\2/' "$out/new") | sed 's/^/  /'
  exit 1
fi
if ((rc != 0)); then
  echo "clang_tidy.sh: FAILED: clang-tidy exited $rc (see $out/log)"
  exit 1
fi
echo "clang_tidy.sh: OK"
