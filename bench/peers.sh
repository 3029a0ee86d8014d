#!/usr/bin/env bash
# Roundtrip beside its baselines, in one run, on one machine:
#   actix-raw   the raw actix-web ceiling (parse the JSON-RPC body, write a fixed result)
#   rmcp-json   rmcp 3.11's stateless Streamable HTTP server answering JSON
#   rt-echo     Roundtrip, tools/call echo on the API-key tenant `demo`
#   rt-mrtr     Roundtrip, sealed two-round greet flows on `demo` (each flow carries its state)
#   base-echo, base-mrtr   the same two against another build, BASE_BIN, when it is set: a
#               change's before and after, interleaved in one run
# Every server is pinned to CPU 0, the load generator (`roundtrip bench`, the same for every
# target) to CPU 1. Rounds are interleaved (round 1: every target, round 2: every target, ...)
# so a slow minute of a shared box hits every target alike, and each ratio is taken inside a
# round before the median over rounds. A run waits for a quiet machine and is repeated when
# other processes used the CPUs during it.
#
# The peers are built from crates.io in a scratch folder outside the workspace ($SCRATCH), from
# the sources in bench/peers/.
#
# usage: bench/peers.sh                       full run: 3 rounds x 10 s per target, 32 conns
#        DURATION=2s ROUNDS=1 bench/peers.sh  quick look
# env:   DURATION (10s) ROUNDS (3) CONNS (32) C1_DURATION (5s) WARMUP (1s)
#        SCRATCH (/tmp/roundtrip-peers) OUT ($SCRATCH/run-<time>) ONLY (target names)
#        QUIET_PCT (10: % of one core both CPUs may be busy before a run) QUIET_WAIT (180 s)
#        FOREIGN_MAX_PCT (10) MAX_TRIES (3)
#        BASE_BIN (a roundtrip binary to measure beside this one, e.g. a build of the previous
#        commit; adds the base-* targets and the ratios that compare the two builds)
#        LOG (the servers' log level; unset: `serve`'s default, info)
# Output: a table on stdout, every driver report and summary.json under $OUT. Each ratio is
# printed with a 95% interval of its median over rounds (order statistics: with few rounds it
# spans them all), and echo / raw and MRTR / echo also by server CPU per request.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
SCRATCH=${SCRATCH:-/tmp/roundtrip-peers}
OUT=${OUT:-$SCRATCH/run-$(date -u +%Y%m%dT%H%M%SZ)}
DURATION=${DURATION:-10s}
ROUNDS=${ROUNDS:-3}
CONNS=${CONNS:-32}
C1_DURATION=${C1_DURATION:-5s}
WARMUP=${WARMUP:-1s}
ONLY=${ONLY:-}
BASE_BIN=${BASE_BIN:-}
QUIET_PCT=${QUIET_PCT:-10}
QUIET_WAIT=${QUIET_WAIT:-180}
FOREIGN_MAX_PCT=${FOREIGN_MAX_PCT:-10}
MAX_TRIES=${MAX_TRIES:-3}
KEY=bench-key
mkdir -p "$OUT" "$SCRATCH"
log() { printf '%s\n' "$*" >&2; }
command -v jq >/dev/null || { log "jq is required"; exit 1; }
command -v taskset >/dev/null || { log "taskset is required"; exit 1; }

# ------------------------------------------------------------------ build
log "== building roundtrip (release)"
(cd "$ROOT" && cargo build --release -q --bin roundtrip)
RT_BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release/roundtrip
for peer in actix-raw rmcp-json; do
  log "== building $peer in $SCRATCH/$peer (release, from crates.io)"
  mkdir -p "$SCRATCH/$peer"
  cp -R "$HERE/peers/$peer/." "$SCRATCH/$peer/"
  (cd "$SCRATCH/$peer" && CARGO_TARGET_DIR="$SCRATCH/target" cargo build --release -q)
done
ACTIX_BIN=$SCRATCH/target/release/peer-actix-raw
RMCP_BIN=$SCRATCH/target/release/peer-rmcp-json

# ------------------------------------------------------------------ servers
declare -A PID=()
stop_all() {
  local s
  for s in "${!PID[@]}"; do kill "${PID[$s]}" 2>/dev/null || true; done
  for s in "${!PID[@]}"; do wait "${PID[$s]}" 2>/dev/null || true; done
}
trap stop_all EXIT
trap 'exit 130' INT TERM

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
start_server() { # NAME PORT ARGV...
  local name=$1 port=$2; shift 2
  if port_open "$port"; then log "!! port $port is in use"; exit 1; fi
  taskset -c 0 "$@" > "$OUT/$name.server.log" 2>&1 &
  PID[$name]=$!
  local _
  for _ in $(seq 100); do port_open "$port" && return 0; sleep 0.1; done
  log "!! $name did not listen on $port (see $OUT/$name.server.log)"; exit 1
}
start_server actix 3201 "$ACTIX_BIN" 127.0.0.1:3201
start_server rmcp 3202 "$RMCP_BIN" 127.0.0.1:3202
# Roundtrip as `serve` starts by default (log level info, audit on), each build on a store of
# its own; LOG=warn measures it with less logging.
start_server roundtrip 3203 env ROUNDTRIP_DEMO_API_KEY=$KEY ROUNDTRIP_DATA_DIR="$OUT/data-roundtrip" \
  ${LOG:+ROUNDTRIP_LOG=$LOG} "$RT_BIN" serve --listen 127.0.0.1:3203 --workers 1
if [[ -n $BASE_BIN ]]; then
  start_server base 3204 env ROUNDTRIP_DEMO_API_KEY=$KEY ROUNDTRIP_DATA_DIR="$OUT/data-base" \
    ${LOG:+ROUNDTRIP_LOG=$LOG} "$BASE_BIN" serve --listen 127.0.0.1:3204 --workers 1
fi
sleep 1
declare -A IDLE_KB=()
for s in "${!PID[@]}"; do IDLE_KB[$s]=$(awk '$1=="VmRSS:" {print $2}' "/proc/${PID[$s]}/status"); done

# ------------------------------------------------------------------ targets
ALL_TARGETS=(actix-raw rmcp-json rt-echo rt-mrtr)
[[ -z $BASE_BIN ]] || ALL_TARGETS+=(base-echo base-mrtr)
TARGETS=()
for t in "${ALL_TARGETS[@]}"; do [[ -z $ONLY || " $ONLY " == *" $t "* ]] && TARGETS+=("$t"); done
# target_args NAME -> SERVER and ARGS (the driver's flags for it)
target_args() {
  case $1 in
    actix-raw) SERVER=actix;     ARGS=(--url http://127.0.0.1:3201/mcp --mode call) ;;
    # rmcp does not stamp resultType on a complete result: checked if present.
    rmcp-json) SERVER=rmcp;      ARGS=(--url http://127.0.0.1:3202/mcp --mode call --lenient-result-type) ;;
    rt-echo)   SERVER=roundtrip; ARGS=(--url http://127.0.0.1:3203/t/demo/mcp --key $KEY --mode call) ;;
    rt-mrtr)   SERVER=roundtrip; ARGS=(--url http://127.0.0.1:3203/t/demo/mcp --key $KEY --mode mrtr) ;;
    base-echo) SERVER=base;      ARGS=(--url http://127.0.0.1:3204/t/demo/mcp --key $KEY --mode call) ;;
    base-mrtr) SERVER=base;      ARGS=(--url http://127.0.0.1:3204/t/demo/mcp --key $KEY --mode mrtr) ;;
  esac
}

cpu_busy() { awk '$1=="cpu0"||$1=="cpu1" {b+=$2+$3+$4+$7+$8+$9} END{print b}' /proc/stat; }
wait_quiet() {
  local waited=0 a b
  while :; do
    a=$(cpu_busy); sleep 1; b=$(cpu_busy)
    (( (b - a) <= QUIET_PCT )) && return 0   # ticks of 1/100 s in one second = % of a core
    (( waited == 0 )) && log "   (machine busy: $((b - a))% of a core; waiting for quiet)"
    waited=$((waited + 1)); (( waited >= QUIET_WAIT )) && { log "   (never quiet; measuring anyway)"; return 0; }
  done
}
# drive TARGET FILE CONNS DURATION: one driver run, repeated while foreign CPU use spoilt it
drive() {
  local t=$1 f=$2 conns=$3 dur=$4 try a b t0 t1 busy fg
  target_args "$t"
  for try in $(seq "$MAX_TRIES"); do
    wait_quiet
    a=$(cpu_busy); t0=$(date +%s%N)
    taskset -c 1 "$RT_BIN" bench "${ARGS[@]}" -c "$conns" --duration "$dur" --warmup "$WARMUP" \
      --server-pid "${PID[$SERVER]}" --out "$f" > "$f.txt" 2>&1 || true
    b=$(cpu_busy); t1=$(date +%s%N)
    busy=$(awk -v d=$((b - a)) -v ns=$((t1 - t0)) 'BEGIN{printf "%.1f", 100 * d / (ns / 1e7)}')
    fg=$(jq -r --argjson busy "$busy" '$busy - (.server_cpu_pct // 0) - (.driver_cpu_pct // 0) | . * 10 | round / 10' "$f")
    jq --argjson fg "$fg" --argjson tries "$try" '. + {foreign_cpu_pct: $fg, tries: $tries}' "$f" > "$f.tmp" && mv "$f.tmp" "$f"
    awk -v x="$fg" -v m="$FOREIGN_MAX_PCT" 'BEGIN{exit !(x<=m)}' && return 0
    log "   (other processes used ${fg}% of a core during the run; again)"
  done
}

# ------------------------------------------------------------------ correctness and warm-up
for t in "${TARGETS[@]}"; do
  drive "$t" "$OUT/$t.check.json" "$CONNS" 2s
  log "== $t: $(head -1 "$OUT/$t.check.json.txt")"
  [[ $(jq .errors "$OUT/$t.check.json") == 0 ]] || { log "!! $t: responses failed their checks:"; cat "$OUT/$t.check.json.txt" >&2; exit 1; }
done

# ------------------------------------------------------------------ interleaved rounds
for r in $(seq "$ROUNDS"); do
  log "== round $r/$ROUNDS ($CONNS connections, $DURATION)"
  for t in "${TARGETS[@]}"; do
    drive "$t" "$OUT/$t.r$r.json" "$CONNS" "$DURATION"
    log "   $t: $(jq -r '"\(.requests_per_sec|round) req/s, p50 \(.latency.p50_ms) ms, p99 \(.latency.p99_ms) ms, errors \(.errors), server \(.server_cpu_pct|round)% driver \(.driver_cpu_pct|round)% foreign \(.foreign_cpu_pct)%"' "$OUT/$t.r$r.json")"
  done
done
log "== one connection ($C1_DURATION)"
for t in "${TARGETS[@]}"; do
  drive "$t" "$OUT/$t.c1.json" 1 "$C1_DURATION"
  log "   $t: $(jq -r '"p50 \(.latency.p50_ms) ms, p99 \(.latency.p99_ms) ms"' "$OUT/$t.c1.json")"
done
declare -A PEAK_KB=()
for s in "${!PID[@]}"; do PEAK_KB[$s]=$(awk '$1=="VmHWM:" {print $2}' "/proc/${PID[$s]}/status"); done

# ------------------------------------------------------------------ summary
{
  for t in "${TARGETS[@]}"; do
    target_args "$t"
    jq -n --arg t "$t" --arg s "$SERVER" --argjson idle "${IDLE_KB[$SERVER]}" --argjson peak "${PEAK_KB[$SERVER]}" \
      --slurpfile runs <(for r in $(seq "$ROUNDS"); do cat "$OUT/$t.r$r.json"; done) \
      --slurpfile c1 "$OUT/$t.c1.json" \
      '{target: $t, server: $s, idle_rss_kb: $idle, peak_rss_kb: $peak,
        runs: [$runs[] | {rps: .requests_per_sec, flows_per_sec, p50_ms: .latency.p50_ms, p99_ms: .latency.p99_ms,
                          server_cpu_us_per_request, driver_cpu_pct, foreign_cpu_pct, errors}],
        c1_p50_ms: $c1[0].latency.p50_ms, c1_p99_ms: $c1[0].latency.p99_ms}'
  done
} | jq -s --arg duration "$DURATION" --argjson conns "$CONNS" --argjson rounds "$ROUNDS" \
     --arg cpu "$(lscpu | sed -n 's/^Model name: *//p' | head -1)" --arg nproc "$(nproc)" '
  def median: sort | if length == 0 then null elif length % 2 == 1 then .[length / 2 | floor]
                     else (.[length / 2 - 1] + .[length / 2]) / 2 end;
  def by($t): map(select(.target == $t)) | first;
  # The runs of $a and $b in each round both ran, paired: [the run of $a, the run of $b].
  def paired($a; $b): [range(0; [$a.runs, $b.runs] | map(length) | min)] | map([$a.runs[.], $b.runs[.]]);
  # The in-round ratios of $a to $b, by requests a second (or by server CPU per request, $b
  # over $a, so that more is better either way; a round whose CPU was not read is left out).
  def in_round($a; $b): paired($a; $b) | map(.[0].rps / .[1].rps);
  def in_round_cpu($a; $b): paired($a; $b) | map(map(.server_cpu_us_per_request))
     | map(select(all(.[]; type == "number" and . > 0))) | map(.[1] / .[0]);
  # f of $a and $b when both targets ran, otherwise null.
  def both($a; $b; f): if ($a | not) or ($b | not) then null else f end;
  def ratio($a; $b): both($a; $b; in_round($a; $b) | median);
  def ratio_cpu($a; $b): both($a; $b; in_round_cpu($a; $b) | median);
  # A 95% interval of the median of these values, from their order statistics (distribution-free,
  # with the normal approximation of the binomial): whether a run decides a target or not.
  def interval: sort | length as $n | if $n == 0 then null else
     ([(($n - 1.96 * ($n | sqrt)) / 2 | floor), 1] | max) as $k | [.[$k - 1], .[$n - $k]] end;
  def ratio_interval($a; $b): both($a; $b; in_round($a; $b) | interval);
  . as $rows |
  { machine: {nproc: $nproc, cpu: $cpu}, connections: $conns, duration: $duration, rounds: $rounds,
    targets: ($rows | map(. + {rps_median: (.runs | map(.rps) | median), p50_ms_median: (.runs | map(.p50_ms) | median),
                               p99_ms_median: (.runs | map(.p99_ms) | median),
                               cpu_us_per_request_median: (.runs | map(.server_cpu_us_per_request) | median),
                               errors: (.runs | map(.errors) | add)})),
    ratios: {
      echo_vs_actix_raw: ratio($rows | by("rt-echo"); $rows | by("actix-raw")),
      rmcp_vs_actix_raw: ratio($rows | by("rmcp-json"); $rows | by("actix-raw")),
      echo_vs_rmcp: ratio($rows | by("rt-echo"); $rows | by("rmcp-json")),
      mrtr_vs_echo_requests: ratio($rows | by("rt-mrtr"); $rows | by("rt-echo")),
      base_echo_vs_actix_raw: ratio($rows | by("base-echo"); $rows | by("actix-raw")),
      base_mrtr_vs_echo_requests: ratio($rows | by("base-mrtr"); $rows | by("base-echo")),
      echo_vs_base_echo: ratio($rows | by("rt-echo"); $rows | by("base-echo")),
      mrtr_vs_base_mrtr: ratio($rows | by("rt-mrtr"); $rows | by("base-mrtr")),
      c1_p50_echo_vs_actix_raw: (if ($rows | by("rt-echo")) and ($rows | by("actix-raw"))
         then ($rows | by("rt-echo")).c1_p50_ms / ($rows | by("actix-raw")).c1_p50_ms else null end)
    },
    intervals: {
      echo_vs_actix_raw: ratio_interval($rows | by("rt-echo"); $rows | by("actix-raw")),
      mrtr_vs_echo_requests: ratio_interval($rows | by("rt-mrtr"); $rows | by("rt-echo")),
      base_echo_vs_actix_raw: ratio_interval($rows | by("base-echo"); $rows | by("actix-raw")),
      base_mrtr_vs_echo_requests: ratio_interval($rows | by("base-mrtr"); $rows | by("base-echo"))
    },
    by_server_cpu: {
      echo_vs_actix_raw: ratio_cpu($rows | by("rt-echo"); $rows | by("actix-raw")),
      mrtr_vs_echo: ratio_cpu($rows | by("rt-mrtr"); $rows | by("rt-echo"))
    } }' > "$OUT/summary.json"

echo
echo "Roundtrip and peers | $(nproc) CPUs, $(lscpu | sed -n 's/^Model name: *//p' | head -1) | servers on CPU 0, roundtrip bench on CPU 1 | $CONNS connections, $ROUNDS interleaved rounds of $DURATION, medians | $(date -u +%FT%TZ)"
echo "reports: $OUT"
jq -r '.targets[] | [.target, (.rps_median|round), (.runs|map(.rps|round)|join(",")), .p50_ms_median, .p99_ms_median, .c1_p50_ms,
        (.cpu_us_per_request_median * 10 | round / 10), .idle_rss_kb, .peak_rss_kb, .errors] | @tsv' "$OUT/summary.json" |
  awk -F'\t' 'BEGIN{printf "%-10s %8s %-22s %8s %8s %9s %8s %8s %8s %6s\n","target","req/s","per round","p50 ms","p99 ms","c1 p50","us/req","idle KB","peak KB","errors"}
              {printf "%-10s %8s %-22s %8.3f %8.3f %9.3f %8s %8s %8s %6s\n",$1,$2,$3,$4,$5,$6,$7,$8,$9,$10}'
echo
jq -r '.intervals as $i | .ratios | to_entries[] | select(.value != null)
        | "\(.key) = \(.value * 1000 | round / 1000)"
          + (($i[.key] // null) as $r | if $r then " (95% interval of the median \($r[0] * 1000 | round / 1000)–\($r[1] * 1000 | round / 1000))" else "" end)' "$OUT/summary.json"
jq -r '.by_server_cpu | to_entries[] | select(.value != null) | "by server CPU per request: \(.key) = \(.value * 1000 | round / 1000)"' "$OUT/summary.json"
jq -r '.targets[] | select(.target == "rt-echo") | "roundtrip idle RSS = \(.idle_rss_kb) KB"' "$OUT/summary.json"
echo "(req/s of rt-mrtr counts both rounds; flows/s is half of it. us/req = server CPU per request, user+system.)"
