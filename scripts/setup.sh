#!/bin/sh
# Fresh-machine bootstrap, run by the npm pre-hooks (pretest, precluster, predemo, prebench).
# Installs the npm packages when they are missing or older than the lockfile, then hands over to
# scripts/setup/main.ts (Node 24 from node_modules) for the Go-built tools, the Python env, PostgreSQL and
# .cluster/bin.
# Idempotent: when everything is in place it only compares timestamps and exits.
set -eu

cd "$(dirname "$0")/.."

# npm keeps its own copy of the lockfile in node_modules/.package-lock.json after every install, so a
# lockfile newer than that copy means package-lock.json changed since the last install.
needs_npm_install() {
  # A linked node_modules (a git worktree sharing another checkout's) is that checkout's to install: npm ci here
  # would empty it under the other checkout's feet.
  [ -L node_modules ] && return 1
  [ ! -x node_modules/.bin/node ] && return 0
  [ ! -f node_modules/.package-lock.json ] && return 0
  [ -f package-lock.json ] && [ package-lock.json -nt node_modules/.package-lock.json ] && return 0
  return 1
}

if needs_npm_install; then
  if [ -f package-lock.json ]; then
    echo "setup: npm ci" >&2
    npm ci --no-audit --no-fund
  else
    echo "setup: npm install (no package-lock.json)" >&2
    npm install --no-audit --no-fund
  fi
fi

exec node_modules/.bin/node scripts/setup/main.ts
