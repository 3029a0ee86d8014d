# Sourced by the bench scripts that run one `roundtrip serve` against the wrk harness's own
# scripts and bodies (wrk-callback.sh, wrk-rows.sh). Uses RT_BIN, HARNESS and log() of the
# script that sources it, and sources bench/lib/healthz.sh itself.
#
# Sets WORK, a scratch directory for the script (and the server's store and log), and SERVER,
# the server's pid once started; at exit the server is stopped and WORK removed, unless the
# script has set KEEP_WORK (to keep the server's log for a look).

# shellcheck source=bench/lib/healthz.sh
source "$(dirname "${BASH_SOURCE[0]}")/healthz.sh"

WORK=$(mktemp -d)
SERVER=
KEEP_WORK=
stop_roundtrip() {
  [[ -n $SERVER ]] && kill "$SERVER" 2>/dev/null && wait "$SERVER" 2>/dev/null
  [[ -n $KEEP_WORK ]] || rm -rf "$WORK"
}
trap stop_roundtrip EXIT

# The demo tenant's API key the server is started with.
BENCH_KEY=bench-key

# check_harness: fails with a message unless RT_BIN is an executable and HARNESS holds the
# wrk harness; makes HARNESS an absolute path.
check_harness() {
  [[ -x $RT_BIN ]] || { log "no roundtrip binary at $RT_BIN (set ROUNDTRIP_BIN)"; return 1; }
  [[ -f $HARNESS/mrtr_sealed.lua ]] || { log "no wrk harness at $HARNESS (set HARNESS)"; return 1; }
  HARNESS=$(cd "$HARNESS" && pwd)
}

# start_roundtrip PORT [SERVE_ARG...]: starts `roundtrip serve` on CPU 0, as the harness does,
# with the demo key BENCH_KEY, its store in WORK and its log in WORK/server.log, listening on
# 127.0.0.1:PORT; sets SERVER to its pid. Fails if something already listens on PORT, or, with
# the log's last lines, if the server does not answer /healthz.
start_roundtrip() {
  local port=$1
  shift
  ! port_taken "$port" || { log "port $port is taken by another server (set PORT)"; return 1; }
  (cd "$WORK" && exec env ROUNDTRIP_DEMO_API_KEY="$BENCH_KEY" taskset -c 0 "$RT_BIN" serve \
    --listen "127.0.0.1:$port" "$@" > "$WORK/server.log" 2>&1) &
  SERVER=$!
  wait_healthz "$port" || {
    log "roundtrip did not start on port $port: $(tail -3 "$WORK/server.log")"
    return 1
  }
}
