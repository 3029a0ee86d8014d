#!/usr/bin/env bash
# What the wrk harness's sealed-flow driver spends on each of Roundtrip's responses: its
# `response` callback (`mrtr_sealed.lua`), timed in wrk's own LuaJIT on the two responses
# Roundtrip sends in that flow.
#
# Why: the wrk harness (../shared/bench/peers/run.sh) drives every row with one wrk thread on
# CPU 1. Its echo row defines no `response` callback, so wrk never hands it a body. Its
# sealed row does: on every response the callback runs two Lua pattern matches over the
# whole body, though it keeps only the first state it captures. A match that fails scans
# every byte, so the driver's cost per request grows with Roundtrip's response sizes, and
# when it nears the server's own cost per request the row measures both ends of the loop
# (BENCHMARKS.md, "the wrk harness's sealed driver, timed").
#
# It starts `roundtrip serve` as the harness does (the demo key `bench-key`, a fresh store
# in a scratch directory), sends the harness's round 1 body, builds its round 2 body from
# the answer as the callback does (STATE and KEY replaced), and keeps both responses. Then
# wrk's `init` loads the harness's script unchanged, lets its callback capture a state
# once, as in a run, and times N calls of it on each response with `os.clock()`. No load is
# sent: only the callback runs, on CPU 1 as in the harness.
#
# usage: bench/wrk-callback.sh
# env:   ROUNDTRIP_BIN (target/release/roundtrip)  HARNESS (../shared/bench/peers)
#        N (1000000: calls timed per response)  PORT (3199)
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
RT_BIN=${ROUNDTRIP_BIN:-$ROOT/target/release/roundtrip}
HARNESS=${HARNESS:-$ROOT/../shared/bench/peers}
N=${N:-1000000}
PORT=${PORT:-3199}
TOOL=test_input_required_result_request_state
log() { printf '%s\n' "$*" >&2; }
for tool in wrk jq curl taskset; do
  command -v "$tool" >/dev/null || { log "$tool is required (bench/install-tools.sh installs wrk)"; exit 1; }
done
# shellcheck source=bench/lib/roundtrip_server.sh
source "$HERE/lib/roundtrip_server.sh"
check_harness || exit 1

start_roundtrip "$PORT" || exit 1
URL=http://127.0.0.1:$PORT/t/conformance/mcp
post() {
  curl -sf "$URL" -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' -H 'MCP-Protocol-Version: 2026-07-28' \
    -H 'Mcp-Method: tools/call' -H "Mcp-Name: $TOOL" --data-binary "@$1"
}
post "$HARNESS/body_mrtr_state_round1.json" > "$WORK/response1.json"
STATE=$(jq -er '.result.requestState' "$WORK/response1.json")
KEY=$(jq -er '.result.inputRequests | keys[0]' "$WORK/response1.json")
sed "s/KEY/$KEY/; s/STATE/$STATE/" "$HARNESS/body_mrtr_state_round2.json" > "$WORK/round2.json"
post "$WORK/round2.json" > "$WORK/response2.json"
jq -e '.result.resultType == "complete"' "$WORK/response2.json" > /dev/null \
  || { log "round 2 did not complete: $(cat "$WORK/response2.json")"; exit 1; }

cat > "$WORK/time.lua" <<'LUA'
local function slurp(p) local f = assert(io.open(p, "rb")); local s = f:read("*a"); f:close(); return s end
local work, harness, n = os.getenv("WORK"), os.getenv("HARNESS"), tonumber(os.getenv("N"))
local responses = { slurp(work .. "/response1.json"), slurp(work .. "/response2.json") }
init = function(args)
  dofile(harness .. "/mrtr_sealed.lua")
  init(args)
  response(200, {}, responses[1]) -- the one capture of a run
  local us = {}
  for round = 1, 2 do
    local body = responses[round]
    local t = os.clock()
    for _ = 1, n do response(200, {}, body) end
    us[round] = (os.clock() - t) / n * 1e6
    io.write(string.format("round %d response: %4d bytes, %.3f us per callback\n", round, #body, us[round]))
  end
  io.write(string.format("per request of the flow (rounds alternate): %.3f us\n", (us[1] + us[2]) / 2))
  os.exit(0)
end
LUA
log "== timing $HARNESS/mrtr_sealed.lua's response callback, $N calls per response, on CPU 1"
env WORK="$WORK" HARNESS="$HARNESS" N="$N" MCP_NAME=$TOOL \
  BODY1_FILE="$HARNESS/body_mrtr_state_round1.json" BODY2_FILE="$HARNESS/body_mrtr_state_round2.json" \
  taskset -c 1 wrk -t1 -c1 -d1s -s "$WORK/time.lua" "$URL"
