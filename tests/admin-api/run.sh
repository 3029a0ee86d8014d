#!/usr/bin/env bash
# Runs schemathesis (PyPI) against the admin API of a freshly started `roundtrip serve`: the
# OpenAPI document at /admin/v1/openapi.json, as the operator, every phase (examples,
# coverage, fuzzing, and the stateful phase that follows the document's links), with the
# checks listed in CHECKS below. Any failure fails the run. See the README ("The admin API
# under schemathesis").
#
# Usage: tests/admin-api/run.sh [--install-only]
#
# Environment:
#   ROUNDTRIP_CACHE               cache root (default: <repo>/.cache); the venv goes to
#                                 $ROUNDTRIP_CACHE/admin-api
#   ROUNDTRIP_BIN                 binary to test (default: build the release binary)
#   ROUNDTRIP_SCHEMATHESIS_OUT    results directory (default: a new mktemp dir, kept)
#   ROUNDTRIP_SCHEMATHESIS_EXAMPLES  examples per operation and phase (default: 60)
#   ROUNDTRIP_SCHEMATHESIS_SEED   the run's seed (default: a fixed one, so CI repeats itself;
#                                 set another to explore)
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HERE="$REPO/tests/admin-api"

# Pinned: schemathesis itself, and every package it pulls in (requirements.txt, from
# `pip freeze` of a venv where it was installed), so a new hypothesis release cannot change
# what CI generates.
SCHEMATHESIS_VERSION=4.32.5

CACHE="${ROUNDTRIP_CACHE:-$REPO/.cache}/admin-api"
VENV="$CACHE/venv-$SCHEMATHESIS_VERSION"
ST="$VENV/bin/schemathesis"
EXAMPLES="${ROUNDTRIP_SCHEMATHESIS_EXAMPLES:-60}"
SEED="${ROUNDTRIP_SCHEMATHESIS_SEED:-20261204}"

# The checks: all of schemathesis's but object_level_authorization, which needs a second
# identity configured (tests/it/admin/access.rs pins who sees what). 413 is a right answer to
# any body, valid or not (schemathesis.toml says why); a key's expires_at in the past is moved
# ahead in valid cases (hooks.py says why).
CHECKS=not_a_server_error,status_code_conformance,content_type_conformance
CHECKS+=,response_schema_conformance,response_headers_conformance
CHECKS+=,negative_data_rejection,positive_data_acceptance
CHECKS+=,missing_required_header,ignored_auth,unsupported_method,allow_header_conformance
CHECKS+=,use_after_free,ensure_resource_availability

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'run.sh: error: %s\n' "$*" >&2; exit 2; }

install_tools() {
  command -v python3 >/dev/null || die "python3 is needed to install schemathesis"
  if [[ -x "$ST" && "$("$ST" --version 2>/dev/null)" == *" $SCHEMATHESIS_VERSION" ]]; then
    return 0
  fi
  log "installing schemathesis==$SCHEMATHESIS_VERSION into $VENV"
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check \
    -c "$HERE/requirements.txt" "schemathesis==$SCHEMATHESIS_VERSION" >&2
  [[ "$("$ST" --version)" == *" $SCHEMATHESIS_VERSION" ]] || die "unexpected schemathesis: $("$ST" --version)"
}

# The roundtrip binary under test, built unless ROUNDTRIP_BIN names one: sets BIN.
roundtrip_bin() {
  local bin="${ROUNDTRIP_BIN:-}"
  if [[ -z "$bin" ]]; then
    log "building roundtrip (cargo build --release --bin roundtrip)"
    (cd "$REPO" && cargo build --release --bin roundtrip)
    bin="${CARGO_TARGET_DIR:-$REPO/target}/release/roundtrip"
  fi
  [[ -x "$bin" ]] || die "roundtrip binary not executable: $bin"
  BIN=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
}

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
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# http_ok URL: does GET URL answer 200 within 2 s?
http_ok() {
  python3 - "$1" <<'PY'
import sys, urllib.request
try:
    sys.exit(0 if urllib.request.urlopen(sys.argv[1], timeout=2).status == 200 else 1)
except Exception:
    sys.exit(1)
PY
}

start_server() {
  PORT=$(free_port)
  SERVER_WORKDIR=$(mktemp -d "${TMPDIR:-/tmp}/roundtrip-admin-api-srv.XXXXXX")
  TOKEN="rt_operator_$(python3 -c 'import secrets; print(secrets.token_urlsafe(24))')"
  BASE_URL="http://127.0.0.1:$PORT"
  SERVER_LOG="$OUT/server.log"
  log "starting $BIN serve on 127.0.0.1:$PORT (data dir $SERVER_WORKDIR/data, log $SERVER_LOG)"
  (cd "$SERVER_WORKDIR" && ROUNDTRIP_ADMIN_TOKEN="$TOKEN" ROUNDTRIP_DATA_DIR="$SERVER_WORKDIR/data" \
    ROUNDTRIP_LISTEN="127.0.0.1:$PORT" exec "$BIN" serve) >"$SERVER_LOG" 2>&1 &
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
  log "$("$ST" --version), venv $VENV"
  ((install_only == 0)) || return 0

  OUT="${ROUNDTRIP_SCHEMATHESIS_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/roundtrip-admin-api.XXXXXX")}"
  mkdir -p "$OUT"
  OUT=$(cd "$OUT" && pwd)
  roundtrip_bin
  start_server

  local rc=0
  log "schemathesis run $BASE_URL/admin/v1/openapi.json (seed $SEED, $EXAMPLES examples)"
  # Hooks: what JSON Schema cannot say (see hooks.py). No example database: each run
  # starts from the seed alone.
  # Run in $OUT: schemathesis keeps files in its working directory (.schemathesis/).
  (cd "$OUT" && SCHEMATHESIS_HOOKS=hooks PYTHONPATH="$HERE" "$ST" --config-file "$HERE/schemathesis.toml" \
    run "$BASE_URL/admin/v1/openapi.json" \
    --header "Authorization: Bearer $TOKEN" \
    --checks "$CHECKS" \
    --phases examples,coverage,fuzzing,stateful \
    --max-examples "$EXAMPLES" --seed "$SEED" --generation-database none \
    --workers 1 --request-timeout 10 --max-failures 50 \
    --report junit,ndjson --report-dir "$OUT" --no-color) 2>&1 | tee "$OUT/output.txt" || rc=$?

  if ! kill -0 "$SERVER_PID" 2>/dev/null; then
    log "the server exited during the run; see $SERVER_LOG"
    rc=1
  fi
  if grep -q 'panicked' "$SERVER_LOG"; then
    log "the server panicked during the run; see $SERVER_LOG"
    rc=1
  fi
  printf 'results: %s (server log: %s)\n' "$OUT" "$SERVER_LOG"
  if ((rc != 0)); then
    printf 'RESULT: FAILED (schemathesis exit %s)\n' "$rc"
    return 1
  fi
  printf 'RESULT: PASSED\n'
}

main "$@"
