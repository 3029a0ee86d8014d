#!/usr/bin/env bash
# User-space instructions per request, counted by valgrind's callgrind, for the raw actix-web
# ceiling, Roundtrip's echo tools/call and Roundtrip's sealed two-round MRTR flow.
#
# Why beside bench/peers.sh: wall-clock ratios on a shared two-core VM move by ±15% from
# round to round, while an instruction count is the same for the same binary and inputs
# whatever else the machine does. It leaves out the kernel (loopback TCP, a third or more
# of every target's CPU, the same for all of them), so its ratios are stricter than the
# CPU ratios; and it overstates two things native runs do cheaply: `rep stosb` memsets (each
# byte counts; actix-http clears a 3 KiB header array on every parse attempt, printed apart)
# and SHA-256 (valgrind has no SHA-NI, so sha2 runs its portable code: about 3.5 k instructions
# for a one-block hash that SHA-NI does in about 0.1 µs; also printed apart, inclusive of
# `compress256`: the API key's hash on every request, the argument digest on a sealed one).
#
# Each server runs under callgrind with instrumentation off; the driver warms it up, the
# count is switched on (`callgrind_control -i on`) for a measured window, and the total is
# divided by the requests the driver completed in that window.
#
# Roundtrip runs as `roundtrip serve` starts by default (log level info, audit on, the demo
# tenant in a fresh SQLite store of its own); LOG=warn measures it with less logging.
#
# usage: bench/instructions.sh           (builds Roundtrip and the actix-raw peer as peers.sh does)
# env:   SCRATCH (/tmp/roundtrip-peers)  DURATION (5s)  CONNS (4)  LOG (the server's default)
#        WRK_FLOWS=1 also counts the two Roundtrip rows of the wrk harness (HARNESS, by default
#        ../shared/bench/peers), driven by wrk with that harness's bodies and Lua scripts:
#        wrk-echo (echo on `demo`, with its key) and wrk-state (the sealed flow it measures:
#        `test_input_required_result_request_state` on the anonymous `conformance` tenant, a
#        handler state sealed into every token), and the ratio of the two. Its sealed flow is
#        not the greet flow counted above, so it is counted on its own terms.
#        BASE_BIN (another roundtrip build, e.g. of an earlier commit: its echo and sealed flow
#        are counted too, base-echo and base-mrtr, with the ratios of this build to it)
# Every other ROUNDTRIP_* variable of the environment reaches the servers, so for example
# ROUNDTRIP_AUDIT__ENABLED=false counts without the audit log.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
SCRATCH=${SCRATCH:-/tmp/roundtrip-peers}
DURATION=${DURATION:-5s}
CONNS=${CONNS:-4}
KEY=bench-key
log() { printf '%s\n' "$*" >&2; }
# shellcheck source=bench/lib/healthz.sh
source "$HERE/lib/healthz.sh"
for tool in valgrind callgrind_control callgrind_annotate jq; do
  command -v "$tool" >/dev/null || { log "$tool is required"; exit 1; }
done

log "== building roundtrip and actix-raw (release)"
(cd "$ROOT" && cargo build --release -q --bin roundtrip)
RT_BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release/roundtrip
mkdir -p "$SCRATCH/actix-raw"
cp -R "$HERE/peers/actix-raw/." "$SCRATCH/actix-raw/"
(cd "$SCRATCH/actix-raw" && CARGO_TARGET_DIR="$SCRATCH/target" cargo build --release -q)
ACTIX_BIN=$SCRATCH/target/release/peer-actix-raw
BASE_BIN=${BASE_BIN:-}
WRK_FLOWS=${WRK_FLOWS:-}
HARNESS=${HARNESS:-$ROOT/../shared/bench/peers}
if [[ -n $WRK_FLOWS ]]; then
  command -v wrk >/dev/null || { log "WRK_FLOWS needs wrk (bench/install-tools.sh installs it)"; exit 1; }
  [[ -f $HARNESS/mrtr_sealed.lua ]] || { log "WRK_FLOWS: no wrk harness at $HARNESS"; exit 1; }
fi
[[ -z $BASE_BIN || -x $BASE_BIN ]] || { log "BASE_BIN=$BASE_BIN is not an executable"; exit 1; }
OUT=$(mktemp -d)

# under_callgrind NAME PORT ARGV...: starts ARGV, which listens on PORT, in the background under
# callgrind, instrumentation off, as `serve` starts by default (its own store, the demo key); $!
# is its pid. Stops the script if something already listens on PORT: it would be counted, or
# answer, in the new server's place.
under_callgrind() {
  local name=$1 port=$2
  shift 2
  ! port_taken "$port" || { log "!! port $port is taken by another server"; exit 1; }
  env ROUNDTRIP_DEMO_API_KEY=$KEY ROUNDTRIP_DATA_DIR="$OUT/data-$name" ${LOG:+ROUNDTRIP_LOG=$LOG} \
    valgrind --tool=callgrind --instr-atstart=no \
    --callgrind-out-file="$OUT/$name.cg" "$@" > "$OUT/$name.log" 2>&1 &
}

# count NAME PORT PATH MODE ARGV...: prints "NAME total memset requests sha256"
count() {
  local name=$1 port=$2 path=$3 mode=$4 vp url _
  shift 4
  url=http://127.0.0.1:$port$path
  under_callgrind "$name" "$port" "$@"
  vp=$!
  for _ in $(seq 120); do
    "$RT_BIN" bench --url "$url" --key $KEY --mode "$mode" -c 1 --duration 100ms --warmup 0s \
      > /dev/null 2>&1 && break
    sleep 0.5
  done
  "$RT_BIN" bench --url "$url" --key $KEY --mode "$mode" -c "$CONNS" --duration 2s --warmup 1s > /dev/null
  callgrind_control -i on "$vp" > /dev/null
  "$RT_BIN" bench --url "$url" --key $KEY --mode "$mode" -c "$CONNS" --duration "$DURATION" \
    --warmup 0s --out "$OUT/$name.json" > /dev/null
  callgrind_control -i off "$vp" > /dev/null
  kill -INT "$vp"; wait "$vp" 2>/dev/null || true
  [[ $(jq .errors "$OUT/$name.json") == 0 ]] || { log "!! $name: responses failed their checks"; exit 1; }
  tally "$name" "$(jq .requests "$OUT/$name.json")"
}

# tally NAME REQUESTS: prints "NAME total memset requests sha256" from NAME's callgrind file
tally() {
  local name=$1 requests=$2 total memset sha
  total=$(callgrind_annotate "$OUT/$name.cg" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
  memset=$(callgrind_annotate "$OUT/$name.cg" 2>/dev/null | awk '/memset/ && !seen {gsub(",", "", $1); print $1; seen = 1}')
  # SHA-256 compression, inclusive: its function's own line (the one that names the binary).
  sha=$(callgrind_annotate --inclusive=yes "$OUT/$name.cg" 2>/dev/null |
    awk '/sha2::sha256::compress256 \[/ && !seen {gsub(",", "", $1); print $1; seen = 1}')
  echo "$name ${total:-0} ${memset:-0} $requests ${sha:-0}"
}

# count_wrk NAME PORT KIND: as count, with wrk as the driver of one of the wrk harness's rows
# (KIND echo or state); prints "NAME total memset requests sha256". Its responses are checked.
count_wrk() {
  local name=$1 port=$2 kind=$3 vp url lua _
  local -a drive
  if [[ $kind == echo ]]; then
    url=http://127.0.0.1:$port/t/demo/mcp lua=$HARNESS/mcp.lua
    drive=(BODY_FILE="$HARNESS/body_echo.json" MCP_NAME=echo AUTH=$KEY EXPECT='"text":"hello"')
  else
    url=http://127.0.0.1:$port/t/conformance/mcp lua=$HARNESS/mrtr_sealed.lua
    drive=(BODY1_FILE="$HARNESS/body_mrtr_state_round1.json"
      BODY2_FILE="$HARNESS/body_mrtr_state_round2.json"
      MCP_NAME=test_input_required_result_request_state
      EXPECT1='"resultType":"input_required"' EXPECT2='"resultType":"complete"')
  fi
  under_callgrind "$name" "$port" "$RT_BIN" serve --listen 127.0.0.1:$port --workers 1
  vp=$!
  wait_healthz "$port" 120 0.5 || { log "!! $name did not start on port $port"; exit 1; }
  env "${drive[@]}" wrk -t1 -c"$CONNS" -d2s -s "$lua" "$url" > /dev/null
  callgrind_control -i on "$vp" > /dev/null
  env "${drive[@]}" wrk -t1 -c"$CONNS" -d"$DURATION" -s "$lua" "$url" > "$OUT/$name.wrk.txt"
  callgrind_control -i off "$vp" > /dev/null
  kill -INT "$vp"; wait "$vp" 2>/dev/null || true
  grep -q 'CHECK good=[0-9]* bad=0' "$OUT/$name.wrk.txt" && ! grep -q 'Non-2xx' "$OUT/$name.wrk.txt" ||
    { log "!! $name: responses failed their checks (see $OUT/$name.wrk.txt)"; exit 1; }
  tally "$name" "$(awk '/requests in/ {print $1}' "$OUT/$name.wrk.txt")"
}

{
  count actix-raw 3291 /mcp call "$ACTIX_BIN" 127.0.0.1:3291
  count rt-echo 3292 /t/demo/mcp call "$RT_BIN" serve --listen 127.0.0.1:3292 --workers 1
  count rt-mrtr 3293 /t/demo/mcp mrtr "$RT_BIN" serve --listen 127.0.0.1:3293 --workers 1
  if [[ -n $BASE_BIN ]]; then
    count base-echo 3294 /t/demo/mcp call "$BASE_BIN" serve --listen 127.0.0.1:3294 --workers 1
    count base-mrtr 3295 /t/demo/mcp mrtr "$BASE_BIN" serve --listen 127.0.0.1:3295 --workers 1
  fi
  if [[ -n $WRK_FLOWS ]]; then
    count_wrk wrk-echo 3296 echo
    count_wrk wrk-state 3297 state
  fi
} > "$OUT/counts.txt"

awk '
  { per[$1] = $2 / $4; mem[$1] = $3 / $4; sha[$1] = $5 / $4 }
  END {
    printf "%-10s %12s %12s %12s %16s\n", "target", "instr/req", "memset/req", "sha256/req", "without either"
    for (t in per) printf "%-10s %12.0f %12.0f %12.0f %16.0f\n", t, per[t], mem[t], sha[t], per[t] - mem[t] - sha[t]
    printf "echo_vs_actix_raw = %.3f (without memset %.3f)\n", per["actix-raw"] / per["rt-echo"], \
      (per["actix-raw"] - mem["actix-raw"]) / (per["rt-echo"] - mem["rt-echo"])
    printf "mrtr_vs_echo_requests = %.3f (without memset %.3f, without SHA-256 %.3f, without either %.3f)\n", \
      per["rt-echo"] / per["rt-mrtr"], (per["rt-echo"] - mem["rt-echo"]) / (per["rt-mrtr"] - mem["rt-mrtr"]), \
      (per["rt-echo"] - sha["rt-echo"]) / (per["rt-mrtr"] - sha["rt-mrtr"]), \
      (per["rt-echo"] - mem["rt-echo"] - sha["rt-echo"]) / (per["rt-mrtr"] - mem["rt-mrtr"] - sha["rt-mrtr"])
    if ("wrk-state" in per)
      printf "wrk_state_vs_echo_requests = %.3f (without SHA-256 %.3f)\n", per["wrk-echo"] / per["wrk-state"], \
        (per["wrk-echo"] - sha["wrk-echo"]) / (per["wrk-state"] - sha["wrk-state"])
    if ("base-echo" in per) {
      printf "echo: %+.0f instructions per request against the base build (%.3f of its count)\n", \
        per["rt-echo"] - per["base-echo"], per["rt-echo"] / per["base-echo"]
      printf "mrtr: %+.0f instructions per request against the base build (%.3f of its count)\n", \
        per["rt-mrtr"] - per["base-mrtr"], per["rt-mrtr"] / per["base-mrtr"]
    }
  }' "$OUT/counts.txt"
log "(callgrind files and driver reports: $OUT)"
