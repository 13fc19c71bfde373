#!/usr/bin/env bash
# ThreadSanitizer over the concurrent code, not the whole suite twice: a
# second build folder with -fsanitize=thread (CMake option TCL_TSAN), only
# the test binaries of the connection pool, the stores, the upload writer,
# ChunkChannel and the daemon (a race makes a binary exit 66, which fails the run). Called by
# scripts/test.sh; TCL_TSAN=0 skips it.
#
#   scripts/tsan.sh [extra ctest args]
# LibTorch and OpenMP are not instrumented: scripts/tsan.supp says what is
# suppressed and why.
set -euo pipefail
cd "$(dirname "$0")/.."
export CCACHE_BASEDIR="$(pwd)" CCACHE_NOHASHDIR=true
build_dir=${TCL_TSAN_BUILD_DIR:-build-tsan}
jobs=${TCL_JOBS:-$(nproc)}

# registry/: the pool, the job queue, the alias listener, the upload writer's thread, sample requests.
# api/: ChunkChannel, the token cache, the router (tcl_api_test).
tests=(
  registry_pg_pool_test registry_job_queue_test registry_alias_listener_test registry_upload_store_test
  registry_sample_store_test
  tcl_api_test
)
targets=("${tests[@]}")
# The daemon set (on by default, CI included; TCL_TSAN_DAEMON=0 leaves it out locally): what links
# LibTorch — the model cache, ingest, and tcld itself under the e2e tests of the server (slow
# clients), its routes and the job worker with its heartbeat (training). It builds the trainer and
# the daemon a second time (about 10 minutes on 2 cores without ccache hits).
# A test entry may carry a gtest filter after a colon: the trainer's own loops are instrumented too,
# so a job that trains to the end outlasts the e2e test's wait (TrainJobCreatesTheFirstVersionAsProduction
# ran 4 minutes and timed out); the other training tests (a killed worker's job retried, bad options,
# cancel) still run the worker and its heartbeat thread.
if [[ "${TCL_TSAN_DAEMON:-1}" != 0 ]]; then
  tests+=(tcl_api_model_cache_test tcl_api_ingest_test tcld_e2e_test slow_clients_e2e_test
    "training_e2e_test:-TrainingTest.TrainJobCreatesTheFirstVersionAsProduction")
  targets+=(tcl_api_model_cache_test tcl_api_ingest_test tcld_e2e_test slow_clients_e2e_test training_e2e_test tcld)
fi
mkdir -p "$build_dir"
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTCL_WERROR=ON -DTCL_TSAN=ON \
  -DTCL_FUZZ=OFF > "$build_dir/configure.log" 2>&1 || { cat "$build_dir/configure.log"; exit 1; }
cmake --build "$build_dir" -j "$jobs" --target "${targets[@]}"
export TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1 suppressions=$(pwd)/scripts/tsan.supp ${TSAN_OPTIONS:-}"
# The binaries directly (ctest knows the gtest cases, not the binaries), in
# parallel; each one's output is shown when it fails.
logs="$build_dir/tsan-logs"
rm -rf "$logs" && mkdir -p "$logs"
run_one() {  # NAME[:GTEST_FILTER]
  local name=${1%%:*} filter=${1#*:} bin
  [[ "$filter" == "$1" ]] && filter='*'
  bin=$(find "$build_dir/tests" -type f -name "$name" -perm -u+x | head -1)
  [[ -n "$bin" ]] || { echo "tsan: $name not built" >&2; return 1; }
  if "$bin" --gtest_brief=1 --gtest_filter="$filter" > "$logs/$name.log" 2>&1; then
    echo "tsan: $1 passed"
  else
    echo "tsan: $1 FAILED"; cat "$logs/$name.log"; return 1
  fi
}
export -f run_one
export build_dir logs
printf '%s\n' "${tests[@]}" | xargs -P "$jobs" -I{} bash -c 'run_one {}'
echo "tsan: all passed"
