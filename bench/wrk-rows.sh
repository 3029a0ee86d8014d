#!/usr/bin/env bash
# The wrk harness's two Roundtrip rows, echo and the sealed flow, run in turn against one
# server, with what each costs at both ends of the loop: the server's CPU per request, how
# often its threads slept waiting for work (voluntary context switches per 1,000 requests),
# and the share of its CPU the driver used.
#
# Why: the wrk harness (../shared/bench/peers/run.sh) divides the sealed row's requests/s by
# the echo row's. Its echo row has no `response` callback; its sealed row runs one on every
# response (bench/wrk-callback.sh times it), which keeps wrk's one thread near the whole of
# its CPU, so the server runs out of requests between wrk's bursts more often and sleeps.
# Each sleep and wake-up is kernel time the echo row pays less often. This shows, run by
# run, whether the sealed row's extra server CPU follows those sleeps or something else
# (on the Zen 4 machine of BENCHMARKS.md's "2026-12-07 (afternoon)" section, it did not).
#
# The server starts as the harness starts it (`roundtrip serve` on CPU 0, one worker, the
# demo key `bench-key`, a fresh store in a scratch directory); wrk runs the harness's own
# scripts and bodies, unchanged, with one thread on CPU 1, as the harness does. Each row is
# warmed up for 2 s before each measured run. A run with a response that is not 2xx stops
# the script, and the server's log is kept (its path is printed).
#
# usage: bench/wrk-rows.sh
# env:   ROUNDTRIP_BIN (target/release/roundtrip)  HARNESS (../shared/bench/peers)
#        ROUNDS (4)  DURATION (5: seconds per measured run)  CONNS (32)  PORT (3198)
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
RT_BIN=${ROUNDTRIP_BIN:-$ROOT/target/release/roundtrip}
HARNESS=${HARNESS:-$ROOT/../shared/bench/peers}
ROUNDS=${ROUNDS:-4}
DURATION=${DURATION:-5}
CONNS=${CONNS:-32}
PORT=${PORT:-3198}
log() { printf '%s\n' "$*" >&2; }
for tool in wrk taskset curl bc getconf; do
  command -v "$tool" >/dev/null || { log "$tool is required (bench/install-tools.sh installs wrk)"; exit 1; }
done
# shellcheck source=bench/lib/roundtrip_server.sh
source "$HERE/lib/roundtrip_server.sh"
check_harness || exit 1

start_roundtrip "$PORT" --workers 1 || exit 1
BASE=http://127.0.0.1:$PORT

# drive ROW SECONDS: one wrk run of ROW (echo or sealed), as the harness drives it: wrk's
# report, then a line `cpu USER SYSTEM` with its CPU seconds.
drive() {
  local row=$1 seconds=$2
  local TIMEFORMAT='cpu %U %S'
  if [[ $row == echo ]]; then
    time env BODY_FILE="$HARNESS/body_echo.json" MCP_NAME=echo AUTH=$BENCH_KEY \
      taskset -c 1 wrk -t1 -c"$CONNS" -d"${seconds}s" -s "$HARNESS/mcp.lua" "$BASE/t/demo/mcp"
  else
    time env BODY1_FILE="$HARNESS/body_mrtr_state_round1.json" \
      BODY2_FILE="$HARNESS/body_mrtr_state_round2.json" \
      MCP_NAME=test_input_required_result_request_state \
      taskset -c 1 wrk -t1 -c"$CONNS" -d"${seconds}s" -s "$HARNESS/mrtr_sealed.lua" \
      "$BASE/t/conformance/mcp"
  fi 2>&1
}

# The server's user and system CPU, in clock ticks.
server_ticks() { awk '{print $14 + $15}' "/proc/$SERVER/stat"; }
# The voluntary context switches of all the server's threads.
server_sleeps() { cat /proc/"$SERVER"/task/*/status | awk '/^voluntary_ctxt_switches/ {n += $2} END {print n}'; }
HZ=$(getconf CLK_TCK)

printf '%-7s %5s %9s %14s %14s %12s\n' row round 'req/s' 'server_us/req' 'sleeps/1k_req' 'driver_cpu%'
for round in $(seq "$ROUNDS"); do
  for row in echo sealed; do
    drive "$row" 2 > /dev/null
    ticks0=$(server_ticks) sleeps0=$(server_sleeps)
    drive "$row" "$DURATION" > "$WORK/wrk.txt"
    ticks1=$(server_ticks) sleeps1=$(server_sleeps)
    if grep -q 'Non-2xx' "$WORK/wrk.txt"; then
      KEEP_WORK=1
      log "!! $row, round $round: $(grep 'Non-2xx' "$WORK/wrk.txt"); the server's log: $WORK/server.log"
      exit 1
    fi
    requests=$(awk '/requests in/ {print $1}' "$WORK/wrk.txt")
    rps=$(awk '/Requests\/sec/ {printf "%.0f", $2}' "$WORK/wrk.txt")
    read -r user system < <(awk '/^cpu / {print $2, $3}' "$WORK/wrk.txt")
    printf '%-7s %5d %9d %14.2f %14.1f %12.0f\n' "$row" "$round" "$rps" \
      "$(bc -l <<< "($ticks1 - $ticks0) / $HZ * 1000000 / $requests")" \
      "$(bc -l <<< "($sleeps1 - $sleeps0) * 1000 / $requests")" \
      "$(bc -l <<< "($user + $system) * 100 / $DURATION")"
  done
done
