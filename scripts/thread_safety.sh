#!/usr/bin/env bash
# Clang's thread-safety analysis over the concurrent code: every .cc of
# core/ registry/ api/ daemon/ sampler/ is compiled with clang++ -fsyntax-only
# -Wthread-safety -Werror, with the flags CMake recorded for it
# (compile_commands.json of the gcc build). A member annotated GUARDED_BY
# (core/thread_annotations.h) and touched without its mutex fails here.
#
#   scripts/thread_safety.sh [build-dir]     (default: build, or $TCL_BUILD_DIR)
# Extra clang flags may be passed in TCL_CLANG_FLAGS (e.g. -Wunused-result).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:-${TCL_BUILD_DIR:-build}}
db="$build_dir/compile_commands.json"
[[ -f "$db" ]] || { echo "thread_safety.sh: no $db (configure the build first)" >&2; exit 2; }
clang=${CLANGXX:-/usr/bin/clang++}
jobs=${TCL_JOBS:-$(nproc)}

# One line per file: the compile command with gcc's driver swapped for clang,
# the output dropped and the analysis switched on.
/usr/bin/python3 - "$db" "$clang" "${TCL_CLANG_FLAGS:-}" > "$build_dir/thread_safety.cmds" <<'PY'
import json, os, shlex, sys
db, clang, extra = sys.argv[1], sys.argv[2], shlex.split(sys.argv[3])
root = os.getcwd() + "/"
for e in json.load(open(db)):
    f = e["file"]
    rel = f[len(root):] if f.startswith(root) else f
    if rel.split("/")[0] not in ("core", "registry", "api", "daemon", "sampler"):
        continue
    args = shlex.split(e["command"])[1:]
    out, i = [], 0
    while i < len(args):
        a = args[i]
        if a in ("-o", "-MF", "-MT", "-MQ"):
            i += 2
            continue
        if a in ("-c", "-MD", "-MMD") or a.startswith("-Winvalid-pch") or a == "-fpch-preprocess":
            i += 1
            continue
        if a == "-include" and args[i + 1].endswith("cmake_pch.hxx"):  # gcc's precompiled header
            i += 2
            continue
        out.append(a)
        i += 1
    out += ["-fsyntax-only", "-Wthread-safety", "-Wthread-safety-beta", "-Werror=thread-safety",
            "-Wno-unknown-warning-option"] + extra
    print(shlex.join([clang] + out), flush=True)
PY
n=$(wc -l < "$build_dir/thread_safety.cmds")
echo "thread_safety.sh: clang -Wthread-safety over $n files"
# Only the analysis decides: gcc-only warnings that clang words differently are not errors here.
tr '\n' '\0' < "$build_dir/thread_safety.cmds" | xargs -0 -P "$jobs" -I{} bash -c '{} -Wno-error -Werror=thread-safety'
echo "thread_safety.sh: OK"
