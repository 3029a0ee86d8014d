#!/usr/bin/env bash
# Creates an empty file for every target the workspace's manifests name, so that cargo can
# read the manifests (and fetch every dependency) before any source is there. The Dockerfile
# runs it in its dependency layer, which therefore changes only with Cargo.toml files and
# Cargo.lock; deploy/check.sh runs it in a scratch copy of the manifests and asks cargo to
# read them, so a target added to a manifest and not here fails CI, not the image build.
#
# Usage: deploy/stub-sources.sh DIR   (DIR holds the workspace's Cargo.toml files)
set -euo pipefail
cd "${1:?usage: stub-sources.sh DIR}"

stubs=(
  # The library crates and the binary package.
  src/lib.rs src/main.rs runtime/src/lib.rs tenants/src/lib.rs client/src/lib.rs
  allocator/src/lib.rs
  # The root package's test and benches ([[test]] and [[bench]] in Cargo.toml): cargo
  # refuses a manifest whose declared targets have no file, even to fetch.
  tests/it/main.rs benches/pieces.rs benches/stack.rs benches/legacy_memory/main.rs
)
for stub in "${stubs[@]}"; do
  mkdir -p "$(dirname "$stub")"
  [[ -e "$stub" ]] || : >"$stub"
done
