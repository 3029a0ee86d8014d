# Shell functions for installing pinned npm packages into private folders, sourced by
# tests/conformance/run.sh and tests/interop/install.sh.

# Version recorded in an installed package's package.json ("" if absent).
installed_version() {
  local pj="$1/package.json"
  [[ -f "$pj" ]] || return 0
  sed -n 's/^[[:space:]]*"version":[[:space:]]*"\([^"]*\)".*/\1/p' "$pj" | head -n1
}

# npm_install DIR PACKAGE@VERSION...: a private npm project in DIR holding these packages.
npm_install() {
  local dir="$1"
  shift
  mkdir -p "$dir"
  [[ -f "$dir/package.json" ]] || printf '{"name":"roundtrip-test-tools","private":true}\n' >"$dir/package.json"
  (cd "$dir" && npm install --no-audit --no-fund --save-exact --loglevel=error "$@" >&2)
}
