//! Memory held per idle legacy session: starts the real server binary (one worker), opens
//! sessions with `initialize` over one keep-alive connection, and reads the server's resident
//! set size (`VmRSS`) before and after. The figure is the RSS growth divided by the number of
//! sessions, measured twice (at half and at all of them) to show it is linear.
//!
//! Run: `cargo bench --bench legacy_session_memory` (env `SESSIONS`, default 10000).
//! Linux only (reads /proc).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn main() {
    let sessions: usize = std::env::var("SESSIONS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000);
    let port = free_port();
    let mut server = Server::start(port, sessions);
    let mut conn = Connection::open(port);

    // Warm up: the first sessions pay for one-time allocations (tables, buffers).
    for _ in 0..200 {
        conn.initialize();
    }
    std::thread::sleep(Duration::from_millis(300));
    let base = server.rss_kib();

    let half = sessions / 2;
    for _ in 0..half {
        conn.initialize();
    }
    std::thread::sleep(Duration::from_millis(300));
    let at_half = server.rss_kib();
    for _ in half..sessions {
        conn.initialize();
    }
    std::thread::sleep(Duration::from_millis(300));
    let at_all = server.rss_kib();

    let per = |kib: u64, n: usize| kib as f64 * 1024.0 / n as f64;
    println!("legacy_session_memory: one worker, idle sessions after initialize");
    println!("  baseline RSS (200 sessions open)  {base} KiB");
    println!(
        "  +{half:>6} sessions: RSS {at_half} KiB, {:.0} bytes/session",
        per(at_half.saturating_sub(base), half)
    );
    println!(
        "  +{sessions:>6} sessions: RSS {at_all} KiB, {:.0} bytes/session",
        per(at_all.saturating_sub(base), sessions)
    );
    server.stop();
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

struct Server(Child);

impl Server {
    fn start(port: u16, sessions: usize) -> Server {
        let child = Command::new(env!("CARGO_BIN_EXE_roundtrip"))
            .args([
                "serve",
                "--listen",
                &format!("127.0.0.1:{port}"),
                "--workers",
                "1",
            ])
            .env("ROUNDTRIP_LOG", "warn")
            .env(
                "ROUNDTRIP_LEGACY__MAX_SESSIONS",
                (sessions + 1_000).to_string(),
            )
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the server starts");
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "server did not listen");
            std::thread::sleep(Duration::from_millis(50));
        }
        Server(child)
    }

    fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.0.id()))
            .expect("/proc/PID/status");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .expect("VmRSS")
    }

    fn stop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A keep-alive HTTP/1.1 connection doing `initialize` requests.
struct Connection {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    port: u16,
}

impl Connection {
    fn open(port: u16) -> Connection {
        let stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        stream.set_nodelay(true).expect("nodelay");
        Connection {
            reader: BufReader::new(stream.try_clone().expect("clone")),
            writer: stream,
            port,
        }
    }

    fn initialize(&mut self) {
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{},"sampling":{}},"clientInfo":{"name":"bench","version":"1"}}}"#;
        write!(
            self.writer,
            "POST /t/conformance/mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{body}",
            self.port,
            body.len()
        )
        .expect("write");
        let mut length = 0;
        let mut session = false;
        let mut status = String::new();
        self.reader.read_line(&mut status).expect("status line");
        assert!(status.contains(" 200 "), "initialize failed: {status}");
        loop {
            let mut line = String::new();
            self.reader.read_line(&mut line).expect("header");
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            let lower = line.to_ascii_lowercase();
            if let Some(v) = lower.strip_prefix("content-length:") {
                length = v.trim().parse().expect("length");
            }
            session |= lower.starts_with("mcp-session-id:");
        }
        assert!(session, "no Mcp-Session-Id");
        let mut body = vec![0; length];
        self.reader.read_exact(&mut body).expect("body");
    }
}
