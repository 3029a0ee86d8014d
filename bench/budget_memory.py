#!/usr/bin/env python3
"""Memory per kept item, to check the byte budgets' per-item figures (runtime/src/budget/figures.rs)
against what the process's RSS really grows by.

Starts `roundtrip serve` (one worker, budgets and caps raised out of the way) and, for each case,
holds COUNT items open, reads VmRSS before and after, and prints the growth per item beside what
the budget charges for one:

  session-tiny      legacy sessions declaring `{}` capabilities
  session-max       legacy sessions declaring the largest capabilities accepted
                    (4 KiB per known capability, 16 KiB of `experimental`)
  session-1mib      `initialize` with ~1 MiB of `experimental`: refused (-32602); what the
                    refused attempts leave behind should be ~0 per attempt
  flow-tiny         held shim flows (`test_elicitation`, waiting for the client's answer) with
                    tiny arguments, one HTTP/1.1 connection each
  flow-126k         the same with 126 KiB of arguments (where the arguments weighed most:
                    about twice their size, and the most besides)
  flow-256k         the same with 256 KiB of arguments
  flow-1mib         the same with ~1 MiB of arguments
  listen-empty      `subscriptions/listen` streams following tools only (no resource
                    subscriptions), one HTTP/1.1 connection each
  listen-short      listen streams following 256 resource URIs of 32 bytes each
  listen-mid        listen streams following 60 resource URIs of 2048 bytes each (a 120 KiB
                    request: where the URIs weighed most, about 3.2 times their size)
  listen-max        listen streams following 256 resource URIs of 2048 bytes each (the caps)

Every case starts a fresh server, so one case's allocations do not hide another's, and opens
WARMUP items before it reads the RSS it measures from, so that what the first item sets up
once (thread caches, lazily built tables, the allocator's first pages) is not counted per item.
Linux only (reads /proc). Uses the standard library only.

usage:  cargo build --release && python3 bench/budget_memory.py
env:    ROUNDTRIP_BIN (target/release/roundtrip)  COUNT (200; the 1 MiB cases use COUNT/4)
        WARMUP (10 items per case, not counted)
        CASES (comma-separated names from the list above; default all)
Record the table in BENCHMARKS.md, and adjust figures.rs if an overhead is below what is
measured.
"""

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("ROUNDTRIP_BIN", os.path.join(ROOT, "target", "release", "roundtrip"))
COUNT = int(os.environ.get("COUNT", "200"))
WARMUP = int(os.environ.get("WARMUP", "10"))
CASES = [c for c in os.environ.get("CASES", "").split(",") if c]
TENANT = "conformance"
VERSION = "2025-11-25"
MODERN = "2026-07-28"
MIB = 1024 * 1024

# The budget's figures (runtime/src/budget/figures.rs): keep in step. A flow's params are
# charged 2 1/4 times (figures::kept_request), a listen stream's URIs 4 times
# (figures::listen_uri).
SESSION = 8 * 1024
FLOW = 24 * 1024
LISTEN_STREAM = 16 * 1024
LISTEN_URI = 128


def mem_total():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    raise SystemExit("no MemTotal in /proc/meminfo")


def rss(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise SystemExit(f"no VmRSS for {pid}")


class Server:
    """`roundtrip serve` on a free port, with limits raised so only memory is measured."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="roundtrip-budget-memory-")
        big = str(1 << 40)
        env = dict(os.environ)
        env.update({
            "ROUNDTRIP_DATA_DIR": self.dir,
            "ROUNDTRIP_LOG": "error",
            "ROUNDTRIP_LEGACY__MAX_SESSIONS": "1000000",
            "ROUNDTRIP_LEGACY__MAX_SESSIONS_PER_CALLER": "1000000",
            "ROUNDTRIP_LEGACY__MAX_REQUESTS_PER_SESSION": "1000000",
            "ROUNDTRIP_BUDGETS__CALLER_BYTES": big,
            "ROUNDTRIP_BUDGETS__TENANT_BYTES": big,
            "ROUNDTRIP_STREAMS__MAX_LISTEN": "1000000",
            "ROUNDTRIP_STREAMS__MAX_LISTEN_PER_TENANT": "1000000",
            "ROUNDTRIP_STREAMS__MAX_LISTEN_PER_CALLER": "1000000",
            # At most 3/4 of the machine, as start-up requires.
            "ROUNDTRIP_BUDGETS__PROCESS_BYTES": str(mem_total() // 4 * 3),
        })
        env.pop("RUST_LOG", None)
        self.proc = subprocess.Popen(
            [BIN, "serve", "--listen", "127.0.0.1:0", "--workers", "1"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        for line in self.proc.stdout:
            m = re.search(r" listening on http://([\d.]+):(\d+)", line)
            if m:
                self.host, self.port = m.group(1), int(m.group(2))
                break
        else:
            raise SystemExit("roundtrip serve did not start")

    def rss(self):
        return rss(self.proc.pid)

    def stop(self):
        self.proc.kill()
        self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def post(server, body, session=None, keep=False, until=b'"roundtrip-', extra=()):
    """POSTs `body` on a new connection. keep=False: the whole reply (status, headers, body).
    keep=True: reads until `until` arrives (by default the shim's first leg, `roundtrip-N`)
    and returns the open socket."""
    data = json.dumps(body).encode()
    head = [
        f"POST /t/{TENANT}/mcp HTTP/1.1",
        f"Host: 127.0.0.1:{server.port}",
        "Content-Type: application/json",
        "Accept: application/json, text/event-stream",
        f"Content-Length: {len(data)}",
    ]
    if session:
        head += [f"Mcp-Session-Id: {session}", f"MCP-Protocol-Version: {VERSION}"]
    head += list(extra)
    if not keep:
        head.append("Connection: close")
    sock = socket.create_connection((server.host, server.port))
    sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + data)
    buf = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            break
        buf += chunk
        if keep and until in buf:
            return sock
    sock.close()
    if keep:
        raise SystemExit(f"{until!r} never arrived: {buf[:300]!r}")
    head, _, rest = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.lower(): v.strip() for k, _, v in (l.partition(":") for l in lines[1:])}
    return status, headers, rest


def initialize(server, caps):
    body = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": VERSION, "capabilities": caps,
        "clientInfo": {"name": "budget-memory", "version": "0"}}}
    status, headers, _ = post(server, body)
    sid = headers.get("mcp-session-id")
    if status == 200 and sid:
        # A request makes the session used (it would otherwise expire after 60 s).
        post(server, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, session=sid)
    return status, sid


def max_caps():
    return {
        "roots": {"pad": "r" * (4 * 1024 - 20)},
        "sampling": {"pad": "s" * (4 * 1024 - 20)},
        "elicitation": {"form": {}, "url": {}, "pad": "e" * (4 * 1024 - 40)},
        "experimental": {"pad": "x" * (16 * 1024 - 40)},
    }


def growth_per_item(server, one, count):
    """Opens WARMUP items with `one()`, then `count` more: the RSS growth per counted item."""
    for _ in range(WARMUP):
        one()
    time.sleep(0.5)
    before = server.rss()
    for _ in range(count):
        one()
    time.sleep(0.5)
    return (server.rss() - before) / count


def case_sessions(caps, count, expect_ok=True):
    server = Server()
    try:
        def one():
            status, sid = initialize(server, caps)
            if expect_ok and status != 200:
                raise SystemExit(f"initialize refused ({status}) in a case that expects sessions")
            if not expect_ok and status == 200:
                raise SystemExit("initialize accepted in a case that expects a refusal")
        per_item = growth_per_item(server, one, count)
        charged = SESSION + len(json.dumps(caps, separators=(",", ":"))) if expect_ok else 0
        return per_item, charged
    finally:
        server.stop()


def case_flows(pad_bytes, count):
    server = Server()
    try:
        status, sid = initialize(server, {"elicitation": {"form": {}}})
        if status != 200:
            raise SystemExit(f"initialize refused ({status})")
        params = {"name": "test_elicitation",
                  "arguments": {"message": "hold", "pad": "p" * pad_bytes}}
        held = []

        def one():
            body = {"jsonrpc": "2.0", "id": 10 + len(held), "method": "tools/call",
                    "params": params}
            held.append(post(server, body, session=sid, keep=True))
        per_item = growth_per_item(server, one, count)
        for sock in held:
            sock.close()
        charged = FLOW + len(json.dumps(params, separators=(",", ":"))) * 9 // 4
        return per_item, charged
    finally:
        server.stop()


def case_listens(uris, count):
    server = Server()
    try:
        meta = {"io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientInfo": {"name": "budget-memory", "version": "0"},
                "io.modelcontextprotocol/clientCapabilities": {}}
        notifications = {"toolsListChanged": True}
        if uris:
            notifications["resourceSubscriptions"] = uris
        body = {"jsonrpc": "2.0", "id": "listen", "method": "subscriptions/listen",
                "params": {"notifications": notifications, "_meta": meta}}
        extra = [f"MCP-Protocol-Version: {MODERN}", "Mcp-Method: subscriptions/listen"]
        held = []

        def one():
            held.append(post(server, body, keep=True, until=b"subscriptions/acknowledged",
                             extra=extra))
        per_item = growth_per_item(server, one, count)
        for sock in held:
            sock.close()
        charged = LISTEN_STREAM + sum(LISTEN_URI + 4 * len(u) for u in uris)
        return per_item, charged
    finally:
        server.stop()


def main():
    if not os.path.exists(BIN):
        raise SystemExit(f"{BIN} not found: cargo build --release, or set ROUNDTRIP_BIN")
    big = max(COUNT // 4, 1)
    one_mib = MIB - 4096  # within http.max_body_bytes (1 MiB) with the envelope
    cases = {
        "session-tiny": lambda: case_sessions({}, COUNT),
        "session-max": lambda: case_sessions(max_caps(), COUNT),
        "session-1mib": lambda: case_sessions({"experimental": {"pad": "x" * one_mib}}, big,
                                              expect_ok=False),
        "flow-tiny": lambda: case_flows(16, COUNT),
        "flow-126k": lambda: case_flows(126 * 1024, big),
        "flow-256k": lambda: case_flows(256 * 1024, big),
        "flow-1mib": lambda: case_flows(one_mib, big),
        "listen-empty": lambda: case_listens([], COUNT),
        "listen-short": lambda: case_listens(
            [f"conformance://r/{i:04}/" + "u" * (32 - 21) for i in range(256)], COUNT),
        "listen-mid": lambda: case_listens(
            [f"conformance://r/{i:04}/" + "u" * (2048 - 21) for i in range(60)], big),
        "listen-max": lambda: case_listens(
            [f"conformance://r/{i:04}/" + "u" * (2048 - 21) for i in range(256)], big),
    }
    names = CASES or list(cases)
    print(f"# {BIN} COUNT={COUNT} WARMUP={WARMUP} (the 1 MiB, 126 KiB, 256 KiB, listen-mid and listen-max cases: {big})")
    print(f"{'case':<14} {'items':>6} {'RSS per item':>14} {'charged':>10}")
    for name in names:
        if name not in cases:
            raise SystemExit(f"unknown case {name}; known: {', '.join(cases)}")
        count = big if name.endswith(("1mib", "k", "listen-mid", "listen-max")) else COUNT
        per_item, charged = cases[name]()
        print(f"{name:<14} {count:>6} {per_item / 1024:>11.1f} KiB {charged / 1024:>7.1f} KiB",
              flush=True)


if __name__ == "__main__":
    sys.exit(main())
