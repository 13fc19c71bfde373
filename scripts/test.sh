#!/usr/bin/env bash
# The whole test suite on a fresh Debian 12 machine: install what is missing,
# build, run every test through ctest. Each test binary starts its own
# throwaway PostgreSQL cluster (tests/lib/pg_cluster.h), so nothing needs to
# be running beforehand. Used by .ci/run unchanged.
#
#   scripts/test.sh [extra ctest args]      e.g. scripts/test.sh -R Tcld
#   TCL_TSAN=0 TCL_FUZZ_SECONDS=0 scripts/test.sh    without the TSan and fuzz stages
set -euo pipefail
cd "$(dirname "$0")/.."

# stage NAME CMD...: runs CMD and records its seconds; the table is printed at the end (and on a
# failure), so every CI log says what each stage cost (docs/operations.md, "CI's time").
stage_log=()
stage() {
  local name=$1 start=$SECONDS rc=0
  shift
  echo "== stage $name"
  "$@" || rc=$?
  stage_log+=("$(printf '%-14s %5d s%s' "$name" $((SECONDS - start)) "$([[ $rc == 0 ]] || echo "  (exit $rc)")")")
  return $rc
}
print_stages() {
  echo "== stage seconds (total $SECONDS s; the target for a cold machine is 2700 s, CI's limit 5400 s)"
  printf '  %s\n' "${stage_log[@]}"
  if ((SECONDS > 2700)); then echo "== WARNING: this run took over 45 minutes (docs/operations.md, \"CI's time\")"; fi
}
# clang-tidy runs in the background (below); a run that stops early takes it down too.
tidy_pid=
on_exit() {
  if [[ -n "$tidy_pid" ]]; then kill -- -"$tidy_pid" 2>/dev/null || true; fi
  print_stages
}
trap on_exit EXIT

stage install-deps scripts/install-deps.sh
stage contract-npm scripts/contract/setup.sh   # pinned Redocly and Prism from npm (package-lock.json)
stage console-npm tests/ui/setup.sh             # pinned playwright-core (drives Debian's chromium; no download)
# Every .h and .cc as .clang-format writes it (scripts/format.sh --fix rewrites them).
stage format scripts/format.sh
# ccache hits across clones in other folders (CI builds a fresh clone).
export CCACHE_BASEDIR="$(pwd)" CCACHE_NOHASHDIR=true
build_dir=${TCL_BUILD_DIR:-build}
jobs=${TCL_JOBS:-$(nproc)}
stage configure cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTCL_WERROR=ON
stage build cmake --build "$build_dir" -j "$jobs"
# Clang's thread-safety analysis (GUARDED_BY, core/thread_annotations.h) over the concurrent folders.
stage thread-safety scripts/thread_safety.sh "$build_dir"
# clang-tidy over the product (.clang-tidy; scripts/clang_tidy.sh fails on any finding that
# scripts/clang_tidy_baseline.txt does not list) needs only the build's compile database. It is
# about 440 s of CPU, so it runs beside the tests and the fuzzer at the lowest priority, in the CPU
# they leave idle (PostgreSQL round trips, sleeps, Prism, libFuzzer's one core), in a process group
# of its own; its stage waits for it after them, and that wait is what it adds. TCL_TIDY=0 skips it.
wait_tidy() {
  local rc=0
  wait "$tidy_pid" || rc=$?
  tidy_pid=
  cat "$build_dir/clang-tidy.out"
  return $rc
}
if [[ "${TCL_TIDY:-1}" != 0 && $# -eq 0 ]]; then
  setsid nice -n 19 scripts/clang_tidy.sh "$build_dir" > "$build_dir/clang-tidy.out" 2>&1 &
  tidy_pid=$!
fi
# With no arguments each test runs once: everything but the end-to-end tests, then the end-to-end
# tests with every request and response through Prism's validating proxy against api/openapi.yaml
# (tests/lib/tcld_process.h, contract mode). Those that check what Prism cannot carry
# (scripts/contract/direct_tests.txt) talk to tcld directly in that pass, by their own choice.
# With arguments (scripts/test.sh -R Tcld) one plain ctest run, no proxy.
if [[ $# -eq 0 ]]; then
  stage tests bash -c "cd '$build_dir' && ctest --output-on-failure -j $jobs --timeout 600 -LE e2e"
  stage e2e-tests bash -c "cd '$build_dir' && TCL_CONTRACT_PROXY=1 ctest --output-on-failure -j $jobs --timeout 600 -L e2e"
else
  (cd "$build_dir" && ctest --output-on-failure -j "$jobs" --timeout 600 "$@")
fi
# The record parser under libFuzzer (clang, ASan, UBSan) for a bounded time.
if [[ "${TCL_FUZZ_SECONDS:-60}" != 0 && $# -eq 0 ]]; then
  stage fuzz scripts/fuzz.sh "${TCL_FUZZ_SECONDS:-60}"
fi
if [[ -n "$tidy_pid" ]]; then stage clang-tidy wait_tidy; fi
# ThreadSanitizer over the registry, api and daemon tests that exercise threads (a second
# build folder, build-tsan). TCL_TSAN=0 skips it locally.
if [[ "${TCL_TSAN:-1}" != 0 && $# -eq 0 ]]; then
  stage tsan scripts/tsan.sh
fi
