#!/usr/bin/env bash
# The cost of forwarding a legacy session's requests to the worker that holds it (README,
# "Running a fleet"): three `roundtrip serve` workers on one Redis, each with its own SQLite
# store (the demo tenant, one demo key and one master key for all).
#
# It reports:
# - the share of a legacy session's requests that are forwarded when a client sends them
#   round robin over the workers (each worker's roundtrip_legacy_forwards_total, against the
#   requests sent), to set beside the (N-1)/N a balancer with no stickiness gives;
# - the latency a forward adds: ping after ping in one session, on one keep-alive connection
#   to the owner and one to another worker, interleaved; the p50 (and p90, p99) of each and
#   their difference. The driver's own time is in both, so the difference is the forward's.
#
# usage: bench/forwarding.sh     env: BIN (target/release/roundtrip)  N (2000 pings each)
#        REDIS_URL (redis://127.0.0.1:6379)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$HERE")
BIN=${BIN:-$ROOT/target/release/roundtrip}
N=${N:-2000}
REDIS_URL=${REDIS_URL:-redis://127.0.0.1:6379}
[[ -x $BIN ]] || { echo "no $BIN: cargo build --release first" >&2; exit 1; }

# shellcheck source=bench/lib/fleet_workers.sh
source "$HERE/lib/fleet_workers.sh"
start_workers

python3 - "$N" "${WORKERS[@]}" <<'PY'
import http.client, json, sys, time
n = int(sys.argv[1]); ports = [int(p) for p in sys.argv[2:]]
H = {"content-type": "application/json", "accept": "application/json, text/event-stream",
     "authorization": "Bearer bench-key"}
def conn(port):
    return http.client.HTTPConnection("127.0.0.1", port)
def post(c, body, extra=None):
    c.request("POST", "/t/demo/mcp", json.dumps(body), {**H, **(extra or {})})
    r = c.getresponse(); data = r.read(); return r, data
init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}}
owner = conn(ports[0])
r, _ = post(owner, init)
sid = r.getheader("mcp-session-id")
S = {"mcp-session-id": sid, "mcp-protocol-version": "2025-11-25"}
ping = lambda i: {"jsonrpc": "2.0", "id": i, "method": "ping"}
other = conn(ports[1])
for i in range(200):  # warm both connections and the forward's own keep-alive
    post(owner, ping(i), S); post(other, ping(i), S)
direct, forwarded = [], []
for i in range(n):
    t = time.perf_counter(); r, _ = post(owner, ping(i), S); direct.append(time.perf_counter() - t)
    assert r.status == 200, r.status
    t = time.perf_counter(); r, _ = post(other, ping(i), S); forwarded.append(time.perf_counter() - t)
    assert r.status == 200, r.status
def pct(xs, p):
    xs = sorted(xs); return xs[min(len(xs) - 1, int(len(xs) * p))] * 1e6
print(f"pings: {n} direct to the owner, {n} forwarded by another worker (one keep-alive connection each)")
for name, xs in (("direct", direct), ("forwarded", forwarded)):
    print(f"  {name:9} p50 {pct(xs, .5):7.0f} us  p90 {pct(xs, .9):7.0f} us  p99 {pct(xs, .99):7.0f} us")
print(f"  added by a forward: p50 {pct(forwarded, .5) - pct(direct, .5):.0f} us, p90 {pct(forwarded, .9) - pct(direct, .9):.0f} us")

def forwards():
    total = 0
    for p in ports:
        c = conn(p); c.request("GET", "/metrics"); text = c.getresponse().read().decode()
        for line in text.splitlines():
            if line.startswith('roundtrip_legacy_forwards_total{outcome="forwarded"} '):
                total += int(float(line.split()[-1]))
    return total
before = forwards()
conns = [conn(p) for p in ports]
sent = 3 * 300
for i in range(sent):
    r, _ = post(conns[i % 3], ping(i), S); assert r.status == 200
share = (forwards() - before) / sent
print(f"round robin over {len(ports)} workers: {sent} requests of one session, {share:.3f} forwarded (expected {(len(ports) - 1) / len(ports):.3f})")
PY
