# Sourced by the bench scripts that run one `roundtrip serve` against the wrk harness's own
# scripts and bodies (wrk-callback.sh, wrk-rows.sh). Uses RT_BIN and HARNESS, and log() and
# wait_healthz (bench/lib/healthz.sh) of the script that sources it.

# The demo tenant's API key the server is started with.
BENCH_KEY=bench-key

# check_harness: fails with a message unless RT_BIN is an executable and HARNESS holds the
# wrk harness; makes HARNESS an absolute path.
check_harness() {
  [[ -x $RT_BIN ]] || { log "no roundtrip binary at $RT_BIN (set ROUNDTRIP_BIN)"; return 1; }
  [[ -f $HARNESS/mrtr_sealed.lua ]] || { log "no wrk harness at $HARNESS (set HARNESS)"; return 1; }
  HARNESS=$(cd "$HARNESS" && pwd)
}

# start_roundtrip DIR PORT [SERVE_ARG...]: starts `roundtrip serve` on CPU 0, as the harness
# does, with the demo key BENCH_KEY, its store in DIR and its log in DIR/server.log,
# listening on 127.0.0.1:PORT; sets SERVER to its pid. Fails, with the log's last lines,
# if it does not answer /healthz.
start_roundtrip() {
  local dir=$1 port=$2
  shift 2
  (cd "$dir" && exec env ROUNDTRIP_DEMO_API_KEY="$BENCH_KEY" taskset -c 0 "$RT_BIN" serve \
    --listen "127.0.0.1:$port" "$@" > "$dir/server.log" 2>&1) &
  SERVER=$!
  wait_healthz "$port" || {
    log "roundtrip did not start on port $port: $(tail -3 "$dir/server.log")"
    return 1
  }
}
