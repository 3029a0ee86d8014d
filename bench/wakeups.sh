#!/usr/bin/env bash
# Where a server's kernel time goes under the peer harnesses' closed loop: its replies'
# `sendto` calls, told apart by whether they woke the load driver's CPU with an
# inter-processor interrupt (IPI), for the raw actix-web ceiling, Roundtrip's echo tools/call
# and Roundtrip's sealed two-round MRTR flow.
#
# Why: on loopback a reply is delivered inside the server's `sendto`, and when the driver's
# thread sleeps there, the same call wakes it. On a VM whose idle vCPUs halt at once
# (`guest_halt_poll_ns` 0), such a wake sends an IPI, and that `sendto` took 15-19 µs against
# about 3 µs for the others (2026-12-06, BENCHMARKS.md "the driver's wake-ups"). `perf`'s
# cpu-clock samples put that time in `_raw_spin_unlock_irqrestore` under `sock_def_readable`.
# How often the driver sleeps depends on the server's pace and on how its replies bunch, not
# only on its CPU per request: this separates the two.
#
# Each server runs alone on CPU 0 and the driver (`roundtrip bench`, as bench/peers.sh drives
# them) on CPU 1, 32 connections. First 3 s of load untraced give the server's user and system
# time per request (/proc/PID/stat; the loopback's softirq work is system time of the process
# it interrupts). Then, in another 3 s of load, `perf record -C 0` takes the `sendto` and IPI
# tracepoints for WINDOW seconds: per reply (one `sendto` each), how many woke the driver with
# an IPI and how long those calls and the others took. The tracepoints add their own cost:
# the durations are for comparing targets, not absolute.
#
# usage: bench/wakeups.sh        (as root: the tracepoints; builds nothing, see below)
# env:   ROUNDTRIP_BIN (target/release/roundtrip)
#        ACTIX_BIN ($SCRATCH/target/release/peer-actix-raw, built by bench/peers.sh)
#        SCRATCH (/tmp/roundtrip-peers)  CONNS (32)  WINDOW (0.5: seconds traced)
#        ONLY (target names: actix-raw rt-echo rt-mrtr)
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
SCRATCH=${SCRATCH:-/tmp/roundtrip-peers}
RT_BIN=${ROUNDTRIP_BIN:-$ROOT/target/release/roundtrip}
ACTIX_BIN=${ACTIX_BIN:-$SCRATCH/target/release/peer-actix-raw}
CONNS=${CONNS:-32}
WINDOW=${WINDOW:-0.5}
ONLY=${ONLY:-actix-raw rt-echo rt-mrtr}
KEY=bench-key
log() { printf '%s\n' "$*" >&2; }
for tool in perf python3 taskset jq; do
  command -v "$tool" >/dev/null || { log "$tool is required"; exit 1; }
done
for bin in "$RT_BIN" "$ACTIX_BIN"; do
  [[ -x $bin ]] || { log "$bin is missing: build it (cargo build --release; bench/peers.sh builds the peer)"; exit 1; }
done
OUT=$(mktemp -d)
PID=
stop() { [[ -z $PID ]] || { kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null || true; PID=; }; }
trap stop EXIT

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# The server's user and system CPU time so far, in clock ticks (1/100 s).
cpu_of() { awk '{print $14, $15}' "/proc/$1/stat"; }

# measure NAME PORT PATH MODE ARGV...
measure() {
  local name=$1 port=$2 path=$3 mode=$4 _ a b
  shift 4
  env ROUNDTRIP_DEMO_API_KEY=$KEY ROUNDTRIP_DATA_DIR="$OUT/data-$name" taskset -c 0 "$@" \
    > "$OUT/$name.server.log" 2>&1 &
  PID=$!
  for _ in $(seq 100); do port_open "$port" && break; sleep 0.1; done
  local drive=(taskset -c 1 "$RT_BIN" bench --url "http://127.0.0.1:$port$path" --key $KEY
    --mode "$mode" -c "$CONNS")
  "${drive[@]}" --duration 1s --warmup 0s > /dev/null 2>&1
  # CPU per request, untraced: 3 s of load (300 ticks, so the split is good to about 1%).
  a=$(cpu_of "$PID")
  "${drive[@]}" --duration 3s --warmup 0s --out "$OUT/$name.json" > /dev/null 2>&1
  b=$(cpu_of "$PID")
  [[ $(jq .errors "$OUT/$name.json") == 0 ]] || { log "!! $name: responses failed their checks"; exit 1; }
  # Then the trace, in the middle of another 3 s of load.
  "${drive[@]}" --duration 3s --warmup 0s > /dev/null 2>&1 &
  local driver=$!
  sleep 1
  perf record -q -C 0 -o "$OUT/$name.data" \
    -e syscalls:sys_enter_sendto,syscalls:sys_exit_sendto -e ipi:ipi_send_cpu \
    -- sleep "$WINDOW" 2> /dev/null
  wait "$driver"
  stop
  perf script -i "$OUT/$name.data" -F time,event 2> /dev/null > "$OUT/$name.trace"
  echo "$name $(jq '.requests_per_sec, .requests' "$OUT/$name.json" | tr '\n' ' ') $a $b" >> "$OUT/runs.txt"
}

for t in $ONLY; do
  case $t in
    actix-raw) measure actix-raw 3281 /mcp call "$ACTIX_BIN" 127.0.0.1:3281 ;;
    rt-echo) measure rt-echo 3282 /t/demo/mcp call "$RT_BIN" serve --listen 127.0.0.1:3282 --workers 1 ;;
    rt-mrtr) measure rt-mrtr 3283 /t/demo/mcp mrtr "$RT_BIN" serve --listen 127.0.0.1:3283 --workers 1 ;;
    *) log "unknown target $t"; exit 1 ;;
  esac
done

python3 - "$OUT" <<'EOF'
import sys, statistics
out = sys.argv[1]
print(f"{'target':10} {'req/s':>8} {'user':>6} {'kernel':>6} {'IPI wakes':>9} "
      f"{'IPI send':>8} {'other send':>10} {'in IPI sends':>12}")
print(f"{'':10} {'':>8} {'us/req':>6} {'us/req':>6} {'per send':>9} "
      f"{'us':>8} {'us':>10} {'us per send':>12}")
for line in open(f"{out}/runs.txt"):
    name, rps, requests, u0, s0, u1, s1 = line.split()
    # Clock ticks of 10^4 µs over the untraced run, per request.
    user = (int(u1) - int(u0)) * 1e4 / int(requests)
    kernel = (int(s1) - int(s0)) * 1e4 / int(requests)
    # In the trace, one reply is one sendto: the IPI figures are per send.
    ipi, other = [], []
    t0 = woke = None
    for row in open(f"{out}/{name}.trace"):
        p = row.split()
        if len(p) < 2:
            continue
        t, ev = float(p[0].rstrip(":")), p[1].rstrip(":")
        if ev == "syscalls:sys_enter_sendto":
            t0, woke = t, False
        elif ev == "syscalls:sys_exit_sendto" and t0 is not None:
            (ipi if woke else other).append((t - t0) * 1e6)
            t0 = None
        elif ev == "ipi:ipi_send_cpu" and t0 is not None:
            woke = True
    sends = len(ipi) + len(other)
    mean = lambda v: statistics.mean(v) if v else 0.0
    print(f"{name:10} {float(rps):8.0f} {user:6.2f} {kernel:6.2f} {len(ipi) / sends:9.3f} "
          f"{mean(ipi):8.1f} {mean(other):10.2f} {sum(ipi) / sends:12.2f}")
EOF
log "(traces and driver reports: $OUT)"
