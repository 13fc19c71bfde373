#!/usr/bin/env bash
# Installs the console tests' pinned browser driver (package-lock.json: playwright-core, which drives
# Debian 12's chromium from scripts/install-deps.sh and downloads no browser) into
# tests/ui/node_modules with `npm ci`. Once per lock file: a stamp holding the lock's SHA-256 makes
# later calls a no-op (as scripts/contract/setup.sh).
set -euo pipefail
cd "$(dirname "$0")"
exec 9<"$(basename "$0")" && flock 9  # ctest may start two callers at once

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "console tests: node and npm are needed (Node.js >= 20.19)" >&2
  exit 1
fi
want=$(sha256sum package-lock.json | cut -d' ' -f1)
stamp=node_modules/.tcl-lock-sha256
if [[ -f $stamp && $(cat "$stamp") == "$want" && -f node_modules/playwright-core/package.json ]]; then
  exit 0
fi
PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error
echo "$want" > "$stamp"
