#!/usr/bin/env bash
# Lints api/openapi.yaml with the pinned Redocly CLI and redocly.yaml beside this script (rules and
# the reason for each exception there). Exit 0 only when the document lints clean. Run by ctest.
set -euo pipefail
cd "$(dirname "$0")"
./setup.sh
export REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true
exec node_modules/.bin/redocly lint --config redocly.yaml --format=stylish
