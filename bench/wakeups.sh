#!/usr/bin/env bash
# Where a server's kernel time goes under the peer harnesses' closed loop: its replies'
# `sendto` calls, told apart by whether they woke the load driver's CPU with an
# inter-processor interrupt (IPI), for the raw actix-web ceiling, Roundtrip's echo tools/call
# and Roundtrip's sealed two-round MRTR flow.
#
# Why: on loopback a reply is delivered inside the server's `sendto`, and when the driver's
# thread sleeps there, the same call wakes it. On a VM whose idle vCPUs halt at once
# (`guest_halt_poll_ns` 0), such a wake sends an IPI, and that `sendto` takes several times
# as long as the others (figures: BENCHMARKS.md, "the driver's wake-ups, measured"). `perf`'s
# cpu-clock samples put that time in `_raw_spin_unlock_irqrestore` under `sock_def_readable`.
# How often the driver sleeps depends on the server's pace and on how its replies bunch, not
# only on its CPU per request: this separates the two.
#
# Each server runs alone on CPU 0 and the driver (`roundtrip bench`, as bench/peers.sh drives
# them) on CPU 1, 32 connections. After 1 s of warm-up, 3 s of load untraced give the
# server's user and system time per request (/proc/PID/stat; the loopback's softirq work is
# system time of the process it interrupts). Then, in another 3 s of load, `perf record -C 0`
# takes the `sendto` and IPI tracepoints for WINDOW seconds: per reply of the server (one
# `sendto` each), how many sent an IPI to the driver's CPU and how long those calls and the
# others took. The tracepoints add their own cost: the durations are under tracing, for
# comparing targets.
#
# usage: bench/wakeups.sh        (as root: the tracepoints, `ipi:*` from Linux 6.3; builds
#                                 nothing, see below)
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
for tool in perf python3 taskset jq getconf; do
  command -v "$tool" >/dev/null || { log "$tool is required"; exit 1; }
done
[[ $EUID == 0 ]] || { log "run as root: perf reads the syscall and IPI tracepoints"; exit 1; }
[[ -d /sys/kernel/tracing/events/ipi/ipi_send_cpu ]] ||
  { log "this kernel has no ipi:ipi_send_cpu tracepoint (Linux 6.3 and later)"; exit 1; }
for bin in "$RT_BIN" "$ACTIX_BIN"; do
  [[ -x $bin ]] || { log "$bin is missing: build it (cargo build --release; bench/peers.sh builds the peer)"; exit 1; }
done
OUT=$(mktemp -d)
PID=
DRIVER=
stop() {
  local p
  for p in $DRIVER $PID; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  PID= DRIVER=
}
trap stop EXIT
trap 'exit 130' INT TERM

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# The server's user and system CPU time so far, in clock ticks.
cpu_of() { awk '{print $14, $15}' "/proc/$1/stat"; }

# measure NAME PORT PATH MODE ARGV...
measure() {
  local name=$1 port=$2 path=$3 mode=$4 _ a b
  shift 4
  if port_open "$port"; then log "!! port $port is in use"; exit 1; fi
  env ROUNDTRIP_DEMO_API_KEY=$KEY ROUNDTRIP_DATA_DIR="$OUT/data-$name" taskset -c 0 "$@" \
    > "$OUT/$name.server.log" 2>&1 &
  PID=$!
  for _ in $(seq 100); do port_open "$port" && break; sleep 0.1; done
  port_open "$port" || { log "!! $name did not listen on $port (see $OUT/$name.server.log)"; exit 1; }
  local drive=(taskset -c 1 "$RT_BIN" bench --url "http://127.0.0.1:$port$path" --mode "$mode"
    -c "$CONNS")
  [[ $name == actix-raw ]] || drive+=(--key "$KEY")
  "${drive[@]}" --duration 1s --warmup 0s > "$OUT/$name.warmup.txt" 2>&1 ||
    { log "!! $name: the driver failed (see $OUT/$name.warmup.txt)"; exit 1; }
  # CPU per request, untraced: 3 s of load (300 ticks at 100 Hz: the split is good to 1%).
  a=$(cpu_of "$PID")
  "${drive[@]}" --duration 3s --warmup 0s --out "$OUT/$name.json" > "$OUT/$name.txt" 2>&1 || true
  b=$(cpu_of "$PID")
  [[ -s $OUT/$name.json && $(jq .errors "$OUT/$name.json") == 0 ]] ||
    { log "!! $name: responses failed their checks (see $OUT/$name.txt)"; exit 1; }
  # Then the trace, in the middle of another 3 s of load.
  "${drive[@]}" --duration 3s --warmup 0s > /dev/null 2>&1 &
  DRIVER=$!
  sleep 1
  perf record -q -C 0 -o "$OUT/$name.data" \
    -e syscalls:sys_enter_sendto,syscalls:sys_exit_sendto -e ipi:ipi_send_cpu \
    -- sleep "$WINDOW" 2> "$OUT/$name.perf.txt" ||
    { log "!! $name: perf record failed (see $OUT/$name.perf.txt)"; exit 1; }
  perf script -i "$OUT/$name.data" -F pid,time,event,trace 2> /dev/null > "$OUT/$name.trace"
  echo "$name $PID $(jq '.requests_per_sec, .requests' "$OUT/$name.json" | tr '\n' ' ') $a $b" \
    >> "$OUT/runs.txt"
  stop
}

for t in $ONLY; do
  case $t in
    actix-raw) measure actix-raw 3281 /mcp call "$ACTIX_BIN" 127.0.0.1:3281 ;;
    rt-echo) measure rt-echo 3282 /t/demo/mcp call "$RT_BIN" serve --listen 127.0.0.1:3282 --workers 1 ;;
    rt-mrtr) measure rt-mrtr 3283 /t/demo/mcp mrtr "$RT_BIN" serve --listen 127.0.0.1:3283 --workers 1 ;;
    *) log "unknown target $t"; exit 1 ;;
  esac
done

python3 - "$OUT" "$(getconf CLK_TCK)" <<'EOF'
import sys, statistics
out, hz = sys.argv[1], int(sys.argv[2])
print(f"{'target':10} {'req/s':>8} {'user':>6} {'kernel':>6} {'IPI wakes':>9} "
      f"{'IPI send':>8} {'other send':>10} {'in IPI sends':>12}")
print(f"{'':10} {'':>8} {'us/req':>6} {'us/req':>6} {'per send':>9} "
      f"{'us':>8} {'us':>10} {'us per send':>12}")
for line in open(f"{out}/runs.txt"):
    name, pid, rps, requests, u0, s0, u1, s1 = line.split()
    # Clock ticks over the untraced run, per request, in µs.
    tick_us = 1e6 / hz
    user = (int(u1) - int(u0)) * tick_us / int(requests)
    kernel = (int(s1) - int(s0)) * tick_us / int(requests)
    # In the trace, one reply is one sendto of the server's; a wake is an IPI it sent to the
    # driver's CPU (1) during that call.
    ipi, other = [], []
    t0 = woke = None
    for row in open(f"{out}/{name}.trace"):
        p = row.split()
        if len(p) < 3 or p[0].split("/")[0] != pid:
            continue
        t, ev = float(p[1].rstrip(":")), p[2].rstrip(":")
        if ev == "syscalls:sys_enter_sendto":
            t0, woke = t, False
        elif ev == "syscalls:sys_exit_sendto" and t0 is not None:
            (ipi if woke else other).append((t - t0) * 1e6)
            t0 = None
        elif ev == "ipi:ipi_send_cpu" and t0 is not None and "cpu=1" in p[3:4]:
            woke = True
    sends = len(ipi) + len(other)
    if sends == 0:
        print(f"{name:10} no sendto of the server's in the trace")
        continue
    mean = lambda v: statistics.mean(v) if v else 0.0
    print(f"{name:10} {float(rps):8.0f} {user:6.2f} {kernel:6.2f} {len(ipi) / sends:9.3f} "
          f"{mean(ipi):8.1f} {mean(other):10.2f} {sum(ipi) / sends:12.2f}")
EOF
log "(traces and driver reports: $OUT)"
