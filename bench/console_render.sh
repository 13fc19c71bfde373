#!/usr/bin/env bash
# bench/console_render.sh — how long each page of the web console (ui/) takes to render with a big
# lineage: a throwaway PostgreSQL and tcld (bench/lib/stack.sh), VERSIONS versions over PLATFORMS
# platforms written by bench_console_seed (through the registry), then bench/console_render.mjs opens
# each page in Debian's headless chromium (tests/ui's pinned playwright-core) RUNS times and prints
# the median and worst milliseconds from navigation to the page's rendered marker.
#
#   bench/console_render.sh [BUILD_DIR] [VERSIONS] [PLATFORMS] [RUNS]     defaults: build 1000 50 5
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
versions=${2:-1000}
platforms=${3:-50}
runs=${4:-5}
tests/ui/setup.sh
source bench/lib/stack.sh
trap stack_stop EXIT
stack_start "$build"
"$build/bench/bench_console_seed" "$TCLD_DATABASE_URL" --versions "$versions" --platforms "$platforms"
read_token=$("$build/daemon/tcld" token create --name console-bench --scope read 2>/dev/null)
models_bytes=$(curl -s -H "Authorization: Bearer $read_token" "$base_url/v1/models?view=summary" | wc -c)
echo "console_render: GET /v1/models?view=summary is $models_bytes bytes"
# What the Lineage page asks for (ui/lineage.js's FIELDS).
fields=$(sed -n "s/^const FIELDS = '\(.*\)';/\1/p" ui/lineage.js)
lineage_bytes=$(curl -s -H "Authorization: Bearer $read_token" "$base_url/v1/models?view=summary&fields=$fields" | wc -c)
echo "console_render: the Lineage page's GET /v1/models?view=summary&fields=... is $lineage_bytes bytes"
node bench/console_render.mjs --url "$base_url" --token "$read_token" --runs "$runs"
