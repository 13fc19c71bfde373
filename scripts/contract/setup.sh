#!/usr/bin/env bash
# Installs the pinned API-contract tools (package-lock.json: @redocly/cli, @stoplight/prism-cli)
# into scripts/contract/node_modules with `npm ci`. Once per lock file: a stamp holding the lock's
# SHA-256 makes later calls a no-op, so CI pays the install once per clone (~10 s with npm's cache).
set -euo pipefail
cd "$(dirname "$0")"
exec 9<"$(basename "$0")" && flock 9  # ctest may start two callers at once

# Redocly CLI 2 needs Node.js >= 20.19 (Debian 12's nodejs is 18.19: too old; the project's
# machines and CI carry Node.js 20 with npm, from NodeSource).
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "contract: node and npm are needed (Node.js >= 20.19)" >&2
  exit 1
fi
node -e 'const [a, b] = process.versions.node.split(".").map(Number);
         if (a < 20 || (a === 20 && b < 19)) { console.error(`contract: Node.js ${process.version} < 20.19`); process.exit(1); }'

want=$(sha256sum package-lock.json | cut -d' ' -f1)
stamp=node_modules/.tcl-lock-sha256
if [[ -f $stamp && $(cat "$stamp") == "$want" && -x node_modules/.bin/prism && -x node_modules/.bin/redocly ]]; then
  exit 0
fi
npm ci --no-audit --no-fund --loglevel=error
echo "$want" > "$stamp"
