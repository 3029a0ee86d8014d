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
# them) on CPU 1. During a window of the load, `perf record -C 0` takes the syscall and IPI
# tracepoints, and /proc/stat gives CPU 0's user, system and softirq time.
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
# CPU 0's user, system and softirq ticks (1/100 s)
cpu0() { awk '$1 == "cpu0" {print $2 + $3, $4, $8}' /proc/stat; }

# measure NAME PORT PATH MODE ARGV...
measure() {
  local name=$1 port=$2 path=$3 mode=$4 _ a b
  shift 4
  env ROUNDTRIP_DEMO_API_KEY=$KEY ROUNDTRIP_DATA_DIR="$OUT/data-$name" taskset -c 0 "$@" \
    > "$OUT/$name.server.log" 2>&1 &
  PID=$!
  for _ in $(seq 100); do port_open "$port" && break; sleep 0.1; done
  taskset -c 1 "$RT_BIN" bench --url "http://127.0.0.1:$port$path" --key $KEY --mode "$mode" \
    -c "$CONNS" --duration 4s --warmup 1s --out "$OUT/$name.json" > /dev/null 2>&1 &
  local driver=$!
  sleep 2
  a="$(cpu0) $(date +%s%N)"
  perf record -q -C 0 -o "$OUT/$name.data" \
    -e syscalls:sys_enter_sendto,syscalls:sys_exit_sendto \
    -e ipi:ipi_send_cpu,sched:sched_wake_idle_without_ipi \
    -- sleep "$WINDOW" 2> /dev/null
  b="$(cpu0) $(date +%s%N)"
  wait "$driver"
  stop
  [[ $(jq .errors "$OUT/$name.json") == 0 ]] || { log "!! $name: responses failed their checks"; exit 1; }
  perf script -i "$OUT/$name.data" -F time,event 2> /dev/null > "$OUT/$name.trace"
  echo "$name $(jq .requests_per_sec "$OUT/$name.json") $a $b" >> "$OUT/runs.txt"
}

for t in $ONLY; do
  case $t in
    actix-raw) measure actix-raw 3281 /mcp call "$ACTIX_BIN" 127.0.0.1:3281 ;;
    rt-echo) measure rt-echo 3282 /t/demo/mcp call "$RT_BIN" serve --listen 127.0.0.1:3282 --workers 1 ;;
    rt-mrtr) measure rt-mrtr 3283 /t/demo/mcp mrtr "$RT_BIN" serve --listen 127.0.0.1:3283 --workers 1 ;;
    *) log "unknown target $t"; exit 1 ;;
  esac
done

python3 - "$OUT" "$WINDOW" <<'EOF'
import sys, statistics
out, window = sys.argv[1], float(sys.argv[2])
print(f"{'target':10} {'req/s':>8} {'user':>6} {'kernel':>6} {'sends':>6} {'IPI wakes':>9} "
      f"{'IPI send':>8} {'other send':>10} {'in IPI sends':>12}")
print(f"{'':10} {'':>8} {'us/req':>6} {'us/req':>6} {'/req':>6} {'/req':>9} "
      f"{'us':>8} {'us':>10} {'us/req':>12}")
for line in open(f"{out}/runs.txt"):
    name, rps, *ticks = line.split()
    rps = float(rps)
    u0, s0, si0, ns0, u1, s1, si1, ns1 = map(int, ticks)
    # CPU 0's time over the traced window (perf's start-up included), per request at the
    # driver's rate, in µs: a tick is 10^4 µs.
    reqs_in_window = rps * (ns1 - ns0) / 1e9
    user = (u1 - u0) * 1e4 / reqs_in_window
    kernel = (s1 - s0 + si1 - si0) * 1e4 / reqs_in_window
    sends, ipi, other = [], [], []
    t0 = woke = first = last = None
    for row in open(f"{out}/{name}.trace"):
        p = row.split()
        if len(p) < 2:
            continue
        t, ev = float(p[0].rstrip(":")), p[1].rstrip(":")
        first = t if first is None else first
        last = t
        if ev == "syscalls:sys_enter_sendto":
            t0, woke = t, False
        elif ev == "syscalls:sys_exit_sendto" and t0 is not None:
            us = (t - t0) * 1e6
            sends.append(us)
            (ipi if woke else other).append(us)
            t0 = None
        elif ev == "ipi:ipi_send_cpu" and t0 is not None:
            woke = True
    reqs = rps * (last - first) if first is not None and last > first else rps * window
    mean = lambda v: statistics.mean(v) if v else 0.0
    print(f"{name:10} {rps:8.0f} {user:6.2f} {kernel:6.2f} {len(sends) / reqs:6.2f} "
          f"{len(ipi) / reqs:9.3f} {mean(ipi):8.1f} {mean(other):10.2f} {sum(ipi) / reqs:12.2f}")
EOF
log "(traces and driver reports: $OUT)"
