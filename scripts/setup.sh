#!/bin/sh
# Fresh-machine bootstrap, run by the npm pre-hooks (pretest, precluster, predemo, prebench).
# Installs the npm packages when they are missing or older than the lockfile, builds the native addon
# (better-sqlite3) for the project's Node, then hands over to scripts/setup/main.ts (Node 24 from node_modules)
# for the Go-built tools, the Python env, PostgreSQL and .cluster/bin.
# Idempotent: when everything is in place it only compares timestamps and exits.
set -eu

cd "$(dirname "$0")/.."

# npm keeps its own copy of the lockfile in node_modules/.package-lock.json after every install, so a
# lockfile newer than that copy means package-lock.json changed since the last install.
needs_npm_install() {
  [ ! -x node_modules/.bin/node ] && return 0
  [ ! -f node_modules/.package-lock.json ] && return 0
  [ -f package-lock.json ] && [ package-lock.json -nt node_modules/.package-lock.json ] && return 0
  return 1
}

# Install scripts are run one by one below: node's fetches the Node 24 binary; better-sqlite3's would build
# against the headers of whatever Node npm itself runs on (or download them, which needs the internet).
if needs_npm_install; then
  if [ -f package-lock.json ]; then
    echo "setup: npm ci" >&2
    npm ci --no-audit --no-fund --ignore-scripts
  else
    echo "setup: npm install (no package-lock.json)" >&2
    npm install --no-audit --no-fund --ignore-scripts
  fi
  npm rebuild node
fi

# better-sqlite3 (the fleet server's embedded database) is compiled for node_modules/.bin/node, with that
# Node's headers taken from the npm registry's node-<platform>-<arch> package (no download from nodejs.org).
NODE=node_modules/.bin/node
ADDON=node_modules/better-sqlite3/build/Release/better_sqlite3.node
STAMP=node_modules/better-sqlite3/build/built-for-node
NODE_VERSION=$($NODE -p process.versions.node)
if [ ! -f "$ADDON" ] || [ "$(cat "$STAMP" 2>/dev/null)" != "$NODE_VERSION" ]; then
  CACHE=${GANTRY_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/gantry}
  HEADERS="$CACHE/node-headers-$NODE_VERSION"
  if [ ! -f "$HEADERS/include/node/node.h" ]; then
    echo "setup: fetching the headers of Node $NODE_VERSION" >&2
    PACKAGE="node-$($NODE -p 'process.platform + "-" + process.arch')@$NODE_VERSION"
    TMP=$(mktemp -d)
    (cd "$TMP" && npm pack --silent "$PACKAGE" >/dev/null)
    tar xzf "$TMP"/*.tgz -C "$TMP" package/include
    mkdir -p "$CACHE"
    rm -rf "$HEADERS"
    mv "$TMP/package" "$HEADERS"
    rm -rf "$TMP"
  fi
  echo "setup: building better-sqlite3 for Node $NODE_VERSION" >&2
  npm_config_nodedir="$HEADERS" npm rebuild better-sqlite3
  echo "$NODE_VERSION" > "$STAMP"
fi

exec $NODE scripts/setup/main.ts
